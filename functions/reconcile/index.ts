import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { FUNCTION_SETTINGS, loadConfig, requireSettings } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { type ReconcilePageResult, Reconciler } from '../../lib/reconcile/Reconciler.js';
import { transportsFor } from '../../lib/transports/configured.js';
import {
  documentClientFor,
  evidenceRecorderFor,
  ledgerFor,
  pullEvidenceFor,
  purposesFor,
} from '../../lib/wiring.js';
import { powertoolsSink } from './metricsSink.js';

/**
 * Reconcile Lambda, one page per invocation; the Step Functions loop (infra/constructs/ReconcilerWorkflow)
 * passes the cursor back in until `hasMore` is false. Only wiring lives here: lib/reconcile is the logic.
 */
const config = requireSettings(loadConfig(), FUNCTION_SETTINGS.reconcile);
const logger = new Logger({ serviceName: SERVICE_NAME });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
const documentClient = documentClientFor(config);
const ledger = ledgerFor(config, documentClient);
// Lookups call the provider, so they need its credentials (cached by Powertools for five minutes).
const transports = transportsFor(config);
const purposes = purposesFor(config);
const evidence = evidenceRecorderFor(
  config,
  { clock: systemClock, logger, metrics: powertoolsSink(metrics) },
  documentClient,
);
// Pull-based providers (the REST convention): their events are read from a durable cursor each run.
const pull = pullEvidenceFor(config, evidence, { logger, now: () => systemClock.now() }, documentClient);

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
    // Events recorded before the row became unknown settle it before any lookup or quarantine.
    evidence,
  });
  try {
    const cursor = typeof event?.cursor === 'string' && event.cursor ? event.cursor : undefined;
    // Once per run (the first page): how many rows wait for the reconciler and for a human.
    if (!cursor) await reconciler.census();
    // Then the provider's event feed, so the page below sees what it settled.
    if (!cursor && pull) await pull.poll();
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
