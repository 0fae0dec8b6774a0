import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ReconcileMetricsSink } from '../../lib/reconcile/Reconciler.js';

/**
 * Powertools EMF behind the small sink lib/reconcile uses. A metric with dimensions (strategy, reason,
 * outcome) is emitted as its own single metric so its dimensions do not leak onto the others.
 */
export const powertoolsSink = (metrics: Metrics): ReconcileMetricsSink => ({
  count: (name, value = 1, dimensions) => {
    if (!dimensions) {
      metrics.addMetric(name, MetricUnit.Count, value);
      return;
    }
    const single = metrics.singleMetric();
    for (const [key, dimension] of Object.entries(dimensions)) single.addDimension(key, dimension);
    single.addMetric(name, MetricUnit.Count, value);
  },
  gauge: (name, value) =>
    metrics.addMetric(name, name.endsWith('Seconds') ? MetricUnit.Seconds : MetricUnit.Count, value),
});
