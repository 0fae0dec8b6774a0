import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { PurposeRegistry } from '../../lib/domain/purposes.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { type SloMetricSet, sloMetricSets } from '../../lib/slo/metrics.js';
import type { SloObservation } from '../../lib/slo/observations.js';

/** EMF allows at most 100 values per metric in one document. */
const MAX_VALUES = 100;

/**
 * The SLO metric sets as Powertools EMF: one document per dimension set (purpose, channel and, where it
 * applies, state or reason), so a set's dimensions never leak onto another's; latencies as value lists,
 * from which CloudWatch computes percentiles. The `service` dimension is Powertools' own.
 */
export const publishSloMetrics = (
  observations: readonly SloObservation[],
  purposes: PurposeRegistry,
): SloMetricSet[] => {
  const sets = sloMetricSets(observations, purposes);
  for (const set of sets) {
    const longest = Math.max(...set.metrics.map((m) => m.values.length));
    for (let offset = 0; offset < longest; offset += MAX_VALUES) {
      const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
      for (const [name, value] of Object.entries(set.dimensions)) metrics.addDimension(name, value);
      let added = 0;
      for (const metric of set.metrics)
        for (const value of metric.values.slice(offset, offset + MAX_VALUES)) {
          metrics.addMetric(
            metric.name,
            metric.unit === 'Count' ? MetricUnit.Count : MetricUnit.Milliseconds,
            value,
          );
          added += 1;
        }
      if (added > 0) metrics.publishStoredMetrics();
    }
  }
  return sets;
};
