import type { DynamoDBRecord } from 'aws-lambda';
import type { ArchiveRecord } from '../archive/schema.js';
import { transitionsOf } from '../archive/transitions.js';
import { type DeliveryState, isTerminal, STATES } from '../domain/states.js';
import { ACCEPTANCE_DECIDING, ACCEPTANCE_GOOD, DELIVERY_DECIDING, DELIVERY_GOOD } from './objectives.js';

/**
 * What one ledger stream record says about the service level objectives, as facts with dimensions that
 * identify no one (purpose, channel, state): never a key, a recipient or an event id.
 *
 * Derived statelessly from the record's images through the archiver's own derivation
 * (lib/archive/transitions.ts), so the stream metrics and the archive query (queries/slo-attainment.sql)
 * apply the same rules to the same transitions:
 * - acceptance: decided at the FIRST arrival of a row in ACCEPTANCE_DECIDING (the row's history, in the
 *   new image, says whether an earlier entry decided already); good when it is ACCEPTANCE_GOOD and came
 *   at most the objective after `reqAt`;
 * - delivery: decided at the FIRST recorded fact of DELIVERY_DECIDING (the old image's facts say whether
 *   one was recorded before); good when DELIVERY_GOOD and in time;
 * - time in state: every new transition out of a non-final state, with how long the row stayed there;
 * - terminal results and suppressions: every move into a final state.
 */
export type SloObservation =
  | {
      kind: 'acceptance';
      purpose: string;
      channel: string;
      /** The deciding state. */
      state: string;
      /** From reqAt to the deciding transition, ms; null when the row has no reqAt. */
      latencyMs: number | null;
      reachedProvider: boolean;
    }
  | {
      kind: 'delivery';
      purpose: string;
      channel: string;
      fact: string;
      latencyMs: number | null;
      delivered: boolean;
    }
  | { kind: 'state_time'; purpose: string; channel: string; state: string; ms: number }
  | { kind: 'terminal'; purpose: string; channel: string; state: string }
  | { kind: 'suppression'; purpose: string; channel: string; reason: string }
  | { kind: 'acceptances'; purpose: string; channel: string };

const deciding = new Set<string>(ACCEPTANCE_DECIDING);
const good = new Set<string>(ACCEPTANCE_GOOD);
const decisive = new Set<string>(DELIVERY_DECIDING);
const delivered = new Set<string>(DELIVERY_GOOD);
const states = new Set<string>(STATES);
const FACT = 'delivery:';

/** A stream record that carries `image` as its new image only: every transition and fact in it is "new". */
type StreamImage = NonNullable<DynamoDBRecord['dynamodb']>['NewImage'];
const asInsert = (record: DynamoDBRecord, image: StreamImage): DynamoDBRecord => ({
  ...record,
  eventName: 'INSERT',
  dynamodb: { ...record.dynamodb, NewImage: image, OldImage: undefined },
});

const latency = (line: ArchiveRecord): number | null =>
  line.requested_at_ms === null || line.transition_at_ms === null
    ? null
    : line.transition_at_ms - line.requested_at_ms;

/** The SLO observations of one stream record (none for REMOVE, items without history, lease renewals). */
export const sloObservationsOf = (record: DynamoDBRecord): SloObservation[] => {
  const lines = transitionsOf(record);
  if (lines.length === 0) return [];
  const newImage = record.dynamodb?.NewImage;
  const oldImage = record.dynamodb?.OldImage;
  // Every transition the row has had (history by version), and every fact it had before this record.
  const history = newImage
    ? transitionsOf(asInsert(record, newImage)).filter((l) => l.record_kind !== 'delivery_fact')
    : [];
  const timeOf = new Map(history.map((l) => [l.version, l.transition_at_ms]));
  const factsBefore =
    record.eventName === 'MODIFY' && oldImage
      ? transitionsOf(asInsert(record, oldImage)).filter((l) => l.record_kind === 'delivery_fact')
      : [];
  // The new image holds the whole history, so "an earlier entry decided" also covers this record's own
  // earlier lines.
  const decidedBefore = (version: number) =>
    history.some((l) => (l.version ?? 0) < version && deciding.has(l.to_state ?? ''));
  let deliveryDecided = factsBefore.some((l) => decisive.has((l.to_state ?? '').slice(FACT.length)));
  const out: SloObservation[] = [];
  for (const line of lines) {
    if (line.record_kind !== 'delivery' && line.record_kind !== 'delivery_fact') continue;
    const purpose = line.purpose ?? '-';
    const channel = line.channel ?? '-';
    const to = line.to_state ?? '';
    if (line.record_kind === 'delivery_fact') {
      const fact = to.slice(FACT.length);
      if (!decisive.has(fact) || deliveryDecided) continue;
      deliveryDecided = true;
      out.push({
        kind: 'delivery',
        purpose,
        channel,
        fact,
        latencyMs: latency(line),
        delivered: delivered.has(fact),
      });
      continue;
    }
    const version = line.version ?? 0;
    const from = line.from_state;
    if (from && from !== to && states.has(from) && !isTerminal(from as DeliveryState)) {
      const enteredAt = timeOf.get(version - 1);
      if (enteredAt !== undefined && enteredAt !== null && line.transition_at_ms !== null)
        out.push({
          kind: 'state_time',
          purpose,
          channel,
          state: from,
          ms: line.transition_at_ms - enteredAt,
        });
    }
    if (from === to) continue;
    if (deciding.has(to) && !decidedBefore(version)) {
      out.push({
        kind: 'acceptance',
        purpose,
        channel,
        state: to,
        latencyMs: latency(line),
        reachedProvider: good.has(to),
      });
    }
    if (to === 'accepted') out.push({ kind: 'acceptances', purpose, channel });
    if (states.has(to) && isTerminal(to as DeliveryState)) {
      out.push({ kind: 'terminal', purpose, channel, state: to });
      if (to === 'suppressed')
        out.push({ kind: 'suppression', purpose, channel, reason: suppressionReason(line.reason) });
    }
  }
  return out;
};

/** `suppressed:bounced_permanent:…` → `bounced_permanent`; a short enum, never an identity. */
const suppressionReason = (why: string | null): string => {
  const match = /^suppressed:([a-z_]{1,40})/.exec(why ?? '');
  return match?.[1] ?? 'listed';
};
