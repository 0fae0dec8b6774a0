import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSHandler } from 'aws-lambda';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { functionConfig } from '../../lib/config.js';
import { Dispatcher } from '../../lib/dispatch/Dispatcher.js';
import { createSqsHandler } from '../../lib/dispatch/sqsHandler.js';
import { visibilityChanger } from '../../lib/dispatch/visibility.js';
import { admissionFor, circuitsFor, createRuntime } from '../../lib/dispatchRuntime.js';
import { systemClock } from '../../lib/domain/clock.js';
import type { RecordedEvidence } from '../../lib/evidence/EvidenceRecorder.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { onFirstUse } from '../../lib/onFirstUse.js';
import { TransportHolds } from '../../lib/rate/TransportHolds.js';

// Built once per execution environment; the handler below only wires the event to the dispatcher.
const config = functionConfig('dispatch');
const logger = new Logger({ serviceName: SERVICE_NAME });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
const runtime = await createRuntime(config);
// The lease owner is this execution environment: a crashed environment's leases expire with it.
const workerId = `dispatch:${randomUUID().slice(0, 8)}`;
// Metrics with small enum dimensions (a country code, a provider name), each its own EMF document.
const dimensioned = {
  count: (name: string, value = 1, dimensions?: Readonly<Record<string, string>>) => {
    if (!dimensions) return metrics.addMetric(name, MetricUnit.Count, value);
    const single = metrics.singleMetric();
    for (const [key, dim] of Object.entries(dimensions)) single.addDimension(key, dim);
    single.addMetric(name, MetricUnit.Count, value);
  },
};
// The evidence recorder (lib/evidenceWiring.ts) loads on the first row with recorded events to apply: one
// the recorder marked (`evk`) before its outcome was written, or one that just became unknown. Never on
// the happy path, so never at the cold start.
// A failed load is not kept: the next row tries again (this one's error reaches its caller as before).
const recorder = onFirstUse(async () => {
  const { evidenceRecorderFor } = await import('../../lib/evidenceWiring.js');
  return evidenceRecorderFor(config, { clock: systemClock, logger }, runtime.documentClient);
});
const evidence: RecordedEvidence = {
  applyRecordedEvidence: async (row) => (await recorder()).applyRecordedEvidence(row),
};
const circuits = await circuitsFor(config, runtime.documentClient, {
  now: () => systemClock.now(),
  workerId,
  logger,
  metrics: dimensioned,
});
const dispatcher = new Dispatcher({
  ...runtime,
  ...(circuits ? { circuits } : {}),
  clock: systemClock,
  workerId,
  leaseMs: config.leaseSeconds * 1000,
  ...(config.maxReceiveCount !== undefined ? { maxReceiveCount: config.maxReceiveCount } : {}),
  ...(config.parkGraceSeconds !== undefined ? { parkGraceMs: config.parkGraceSeconds * 1000 } : {}),
  logger,
  metrics: dimensioned,
  // Pace, SMS country rules and spend breakers; dimensioned metrics carry a country code, never a number.
  admission: admissionFor(config, runtime.documentClient, {
    now: () => systemClock.now(),
    workerId,
    logger,
    metrics: dimensioned,
  }),
  // An account-level answer (SES paused, a quota, an SMS spend limit) holds the whole transport (issue 25).
  holds: new TransportHolds(runtime.documentClient, config.ledgerTable, {
    workerId,
    logger,
    metrics: { count: (name, value = 1) => metrics.addMetric(name, MetricUnit.Count, value) },
  }),
  // A row that becomes unknown is settled at once by provider events recorded while it was dispatching.
  evidence,
});
// The SQS client loads on the first parked message (a retry or a due time), never on the happy path.
const sqs = async () =>
  (await import('../../lib/aws/queueClient.js')).sqsClient(clientOptionsFor(config, 'endpointSqs'));
const handle = createSqsHandler(dispatcher, {
  concurrency: config.recordConcurrency,
  ...(config.queueUrl ? { changeVisibility: visibilityChanger(sqs, config.queueUrl) } : {}),
  onVisibilityError: (error) => logger.warn('visibility change failed', { error: String(error) }),
  onPrefetchError: (error) =>
    logger.warn('batch gate-facts read failed; each record reads for itself', { error: String(error) }),
});

export const handler: SQSHandler = async (event, context) => {
  logger.addContext(context);
  try {
    return await handle(event, context);
  } finally {
    metrics.publishStoredMetrics();
  }
};
