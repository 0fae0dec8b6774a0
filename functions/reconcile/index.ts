import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { sqsClient } from '../../lib/aws/clients.js';
import { FUNCTION_SETTINGS, loadConfig, requireSettings } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { type ReconcilePageResult, Reconciler } from '../../lib/reconcile/Reconciler.js';
import { SqsIntentPublisher } from '../../lib/reconcile/SqsIntentPublisher.js';
import { Sweeper } from '../../lib/reconcile/Sweeper.js';
import { transportsFor } from '../../lib/transports/configured.js';
import { ledgerFor, purposesFor } from '../../lib/wiring.js';
import { powertoolsSink } from './metricsSink.js';

/**
 * Reconcile Lambda, one page per invocation; the Step Functions loop (infra/constructs/ReconcilerWorkflow)
 * passes the cursor back in until `hasMore` is false. Only wiring lives here: lib/reconcile is the logic.
 */
const config = requireSettings(loadConfig(), FUNCTION_SETTINGS.reconcile);
const logger = new Logger({ serviceName: SERVICE_NAME });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
const ledger = ledgerFor(config);
// Lookups call the provider, so they need its credentials (cached by Powertools for five minutes).
const transports = transportsFor(config);
const purposes = purposesFor(config);
const publisher = new SqsIntentPublisher(
  sqsClient({ region: config.region, ...(config.endpointSqs ? { endpoint: config.endpointSqs } : {}) }),
  config.queueUrl,
);
// The sweep looks at a parked message one grace period after it should have come back by itself.
const graceMs = (config.parkGraceSeconds ?? 360) * 1000;

export const handler = async (
  event: { cursor?: string } | null | undefined,
  context: Context,
): Promise<ReconcilePageResult> => {
  logger.addContext(context);
  const reconciler = new Reconciler({
    ledger,
    transports,
    purposes,
    clock: systemClock,
    runId: context.awsRequestId.slice(0, 8),
    concurrency: config.recordConcurrency,
    logger,
    metrics: powertoolsSink(metrics),
  });
  try {
    const cursor = typeof event?.cursor === 'string' && event.cursor ? event.cursor : undefined;
    // Once per run (the first page): the sweep over sealed notifications, then the census.
    if (!cursor) {
      const sweep = await new Sweeper({
        ledger,
        transports,
        clock: systemClock,
        publisher,
        runId: context.awsRequestId.slice(0, 8),
        graceMs,
        recheckMs: graceMs,
        logger,
        metrics: powertoolsSink(metrics),
      }).sweep();
      logger.info('sweep done', { ...sweep });
      await reconciler.census();
    }
    const page = await reconciler.reconcilePage(cursor);
    logger.info('reconcile page done', {
      processed: page.processed,
      resolved: page.resolved,
      quarantined: page.quarantined,
      left: page.left,
      raced: page.raced,
      hasMore: page.hasMore,
    });
    return {
      processed: page.processed,
      resolved: page.resolved,
      quarantined: page.quarantined,
      ...(page.cursor ? { cursor: page.cursor } : {}),
      hasMore: page.hasMore,
    };
  } finally {
    metrics.publishStoredMetrics();
  }
};
