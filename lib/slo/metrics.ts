import { type PurposeRegistry, sloOf } from '../domain/purposes.js';
import type { SloObservation } from './observations.js';

/**
 * Metric names of the service level indicators and instruments (Powertools EMF, namespace Sendproof).
 * Dimensions are `purpose` and `channel` (plus `state` or `reason` where named): never an identity.
 * The SLOs (infra/constructs/ServiceLevels.ts) are good ÷ decided of the first two pairs.
 */
export const SLO_METRIC = {
  /** Messages whose acceptance objective was decided, and those decided good (in time). */
  acceptanceDecided: 'SloAcceptanceDecided',
  acceptanceGood: 'SloAcceptedInTime',
  /** From the caller's request to the deciding transition, ms (the latency distribution). */
  acceptLatency: 'AcceptLatency',
  deliveryDecided: 'SloDeliveryDecided',
  deliveryGood: 'SloDeliveredInTime',
  deliveryLatency: 'DeliveryLatency',
  /** How long a row stayed in a non-final state before it moved on (dimension state), ms. */
  timeInState: 'TimeInState',
  /** Moves into a final state (dimension state): terminal results per channel. */
  terminalResults: 'TerminalResults',
  /** Messages withheld because the recipient is suppressed (dimension reason). */
  suppressions: 'SuppressionOutcomes',
  /** Provider acceptances: the duplicate budget's denominator in the stream. */
  acceptances: 'Acceptances',
  /** Messages accepted twice, counted by the archive audit (functions/slo-audit). */
  duplicateAcceptances: 'DuplicateAcceptances',
  /** Accepted messages the archive audit counted (the duplicate SLO's total). */
  auditedAcceptances: 'AuditedAcceptances',
} as const;

export type SloMetricUnit = 'Count' | 'Milliseconds';

/** Metrics that share one dimension set: one EMF document. */
export interface SloMetricSet {
  dimensions: Record<string, string>;
  metrics: Array<{ name: string; unit: SloMetricUnit; values: number[] }>;
}

/**
 * Turns observations into metric sets, one per dimension set. The SLI counts (decided, good) are also
 * emitted per purpose alone (dimension set `purpose`): the SLOs and burn-rate alarms read those, since a
 * CloudWatch SLO or alarm cannot sum over dimension values it does not know. Then, counts summed and latencies kept as value
 * lists (CloudWatch computes percentiles from them). An acceptance is good when the provider took the
 * message at most the purpose's objective after the request; a message without a request time (a row
 * claimed before it was recorded) is not counted, as in the archive query.
 */
export const sloMetricSets = (
  observations: readonly SloObservation[],
  purposes: PurposeRegistry,
): SloMetricSet[] => {
  const sets = new Map<string, SloMetricSet>();
  const add = (dimensions: Record<string, string>, name: string, unit: SloMetricUnit, value: number) => {
    const id = JSON.stringify(dimensions);
    const set = sets.get(id) ?? { dimensions, metrics: [] };
    sets.set(id, set);
    const metric = set.metrics.find((m) => m.name === name);
    if (!metric) set.metrics.push({ name, unit, values: [value] });
    else if (unit === 'Count') metric.values[0]! += value;
    else metric.values.push(value);
  };
  for (const o of observations) {
    const base = { purpose: o.purpose, channel: o.channel };
    const purposeOnly = { purpose: o.purpose };
    const sli = (name: string, value: number) => {
      add(base, name, 'Count', value);
      add(purposeOnly, name, 'Count', value);
    };
    const slo = sloOf(purposes.find(o.purpose) ?? {});
    switch (o.kind) {
      case 'acceptance': {
        if (o.latencyMs === null) break;
        sli(SLO_METRIC.acceptanceDecided, 1);
        const inTime = o.reachedProvider && o.latencyMs <= slo.accepted.withinSeconds * 1000;
        sli(SLO_METRIC.acceptanceGood, inTime ? 1 : 0);
        if (o.reachedProvider) add(base, SLO_METRIC.acceptLatency, 'Milliseconds', Math.max(0, o.latencyMs));
        break;
      }
      case 'delivery': {
        if (o.latencyMs === null || !slo.delivered) break;
        sli(SLO_METRIC.deliveryDecided, 1);
        const inTime = o.delivered && o.latencyMs <= slo.delivered.withinSeconds * 1000;
        sli(SLO_METRIC.deliveryGood, inTime ? 1 : 0);
        if (o.delivered) add(base, SLO_METRIC.deliveryLatency, 'Milliseconds', Math.max(0, o.latencyMs));
        break;
      }
      case 'state_time':
        add({ ...base, state: o.state }, SLO_METRIC.timeInState, 'Milliseconds', Math.max(0, o.ms));
        break;
      case 'terminal':
        add({ ...base, state: o.state }, SLO_METRIC.terminalResults, 'Count', 1);
        break;
      case 'suppression':
        add({ ...base, reason: o.reason }, SLO_METRIC.suppressions, 'Count', 1);
        break;
      case 'acceptances':
        add(base, SLO_METRIC.acceptances, 'Count', 1);
        break;
    }
  }
  return [...sets.values()];
};
