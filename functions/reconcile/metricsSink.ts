import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ReconcileMetricsSink } from '../../lib/reconcile/Reconciler.js';

interface Pending {
  name: string;
  dimensions: Record<string, string>;
  value: number;
}

/** Per Metrics instance: dimensioned counts of this invocation, summed per (name, dimension set). */
const pendingOf = new WeakMap<Metrics, Map<string, Pending>>();

/**
 * Powertools EMF behind the small sink lib/reconcile and lib/evidence use. A metric with dimensions
 * (strategy, reason, outcome; fact, channel, purpose) goes out as its own single-metric document so its
 * dimensions do not leak onto the others, but once per dimension set and invocation, with the
 * invocation's sum: the evidence function counted every delivered event in its own ~320-byte document
 * (about 40 a batch), billed as CloudWatch Logs ingestion; the alarms read SUM, which is unchanged.
 * `publishMetrics` writes them.
 */
export const powertoolsSink = (metrics: Metrics): ReconcileMetricsSink => ({
  count: (name, value = 1, dimensions) => {
    if (!dimensions) {
      metrics.addMetric(name, MetricUnit.Count, value);
      return;
    }
    const entries = Object.entries(dimensions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const key = JSON.stringify([name, entries]);
    let pending = pendingOf.get(metrics);
    if (!pending) pendingOf.set(metrics, (pending = new Map()));
    const sum = pending.get(key);
    if (sum) sum.value += value;
    else pending.set(key, { name, dimensions: Object.fromEntries(entries), value });
  },
  gauge: (name, value) =>
    metrics.addMetric(name, name.endsWith('Seconds') ? MetricUnit.Seconds : MetricUnit.Count, value),
});

/**
 * The end of an invocation: one document per dimensioned count, then the undimensioned ones, if any
 * (an invocation that counted nothing writes nothing, not Powertools' "No application metrics" warning).
 */
export const publishMetrics = (metrics: Metrics): void => {
  const pending = pendingOf.get(metrics);
  if (pending) {
    for (const { name, dimensions, value } of pending.values()) {
      const single = metrics.singleMetric();
      for (const [key, dimension] of Object.entries(dimensions)) single.addDimension(key, dimension);
      single.addMetric(name, MetricUnit.Count, value);
    }
    pending.clear();
  }
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
};
