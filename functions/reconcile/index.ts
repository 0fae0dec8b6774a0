import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { lazyIntentPublisher } from '../../lib/aws/lazyIntentPublisher.js';
import { functionConfig } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import { evidenceRecorderFor, pullEvidenceFor } from '../../lib/evidenceWiring.js';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { type ReconcilePageResult, Reconciler } from '../../lib/reconcile/Reconciler.js';
import { DynamoRunCursor } from '../../lib/reconcile/RunCursor.js';
import { Sweeper } from '../../lib/reconcile/Sweeper.js';
import { reportLagJudgeFor } from '../../lib/reportLagWiring.js';
import { loadProviderChainsFor } from '../../lib/transports/load.js';
import { documentClientFor, ledgerFor, purposesFor } from '../../lib/wiring.js';
import { powertoolsSink, publishMetrics } from './metricsSink.js';

/**
 * Reconcile Lambda, one page per invocation; the Step Functions loop (infra/constructs/ReconcilerWorkflow)
 * passes the cursor back in until `hasMore` is false. Only wiring lives here: lib/reconcile is the logic.
 *
 * Across runs: every page saves its cursor in the ledger item `reconcile#cursor` (lib/reconcile/RunCursor),
 * and the first page of a run (no cursor in the input) starts where the last run stopped, so rows beyond
 * one run's page budget are reached by the next run instead of being starved. `{ restart: true }` starts
 * from the oldest row regardless.
 */
const config = functionConfig('reconcile');
const logger = new Logger({ serviceName: SERVICE_NAME });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
const documentClient = documentClientFor(config);
const ledger = ledgerFor(config, documentClient);
const runCursor = new DynamoRunCursor(documentClient, config.ledgerTable);
// Lookups call the provider, so they need its credentials (cached by Powertools for five minutes). Only
// the configured adapters are loaded (lib/transports/load.ts).
const providers = await loadProviderChainsFor(config);
const transports = { email: providers.email[0]!, sms: providers.sms[0]! };
const purposes = purposesFor(config);
// SQS loads on the sweep's first re-publish of a stranded notification, not at init.
const publisher = lazyIntentPublisher(clientOptionsFor(config, 'endpointSqs'), config.queueUrl);
// The sweep looks at a parked message one grace period after it should have come back by itself.
const graceMs = (config.parkGraceSeconds ?? 360) * 1000;
const evidence = evidenceRecorderFor(
  config,
  { clock: systemClock, logger, metrics: powertoolsSink(metrics) },
  documentClient,
);
// Pull-based providers (the REST convention): their events are read from a durable cursor each run.
const pull = pullEvidenceFor(config, evidence, { logger, now: () => systemClock.now() }, documentClient);
// With failover: whether a provider's delivery reports fall behind opens its circuit (once per run).
const reports = reportLagJudgeFor(
  config,
  providers,
  { workerId: 'reconciler:reports', now: () => systemClock.now(), logger, metrics: powertoolsSink(metrics) },
  documentClient,
);

export const handler = async (
  event: { cursor?: string; restart?: boolean } | null | undefined,
  context: Context,
): Promise<ReconcilePageResult> => {
  logger.addContext(context);
  const reconciler = new Reconciler({
    ledger,
    transports,
    providers,
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
    const passed = typeof event?.cursor === 'string' && event.cursor ? event.cursor : undefined;
    const firstOfRun = passed === undefined;
    const resumed = firstOfRun && event?.restart !== true ? await runCursor.load(Date.now()) : undefined;
    // Once per run (the first page): the sweep over sealed notifications, then how many rows wait for
    // the reconciler and for a human.
    if (firstOfRun) {
      const sweep = await new Sweeper({
        ledger,
        transports,
        providers,
        clock: systemClock,
        publisher,
        runId: context.awsRequestId.slice(0, 8),
        graceMs,
        recheckMs: graceMs,
        evidence,
        logger,
        metrics: powertoolsSink(metrics),
      }).sweep();
      logger.info('sweep done', { ...sweep });
      await reconciler.census();
      // Then the provider's event feed, so the page below sees what it settled.
      // A feed that cannot answer must not stop the run: lookups and the deadline still apply.
      if (pull)
        await pull.poll().catch((error: unknown) => {
          metrics.addMetric(METRIC.lookupsUnavailable, MetricUnit.Count, 1);
          logger.warn('provider event feed unavailable; this run continues without it', {
            error: error instanceof Error ? error.message : String(error),
          });
        });
    }
    // The report counters the outcomes consumer keeps: a provider whose reports fall behind is skipped.
    if (firstOfRun && reports)
      await reports.judge.judge(reports.providers).catch((error: unknown) => {
        logger.warn('provider report judgement failed; the next run judges again', {
          error: error instanceof Error ? error.message : String(error),
        });
      });
    // A resumed first page does not start at the oldest row, so the age gauge is read here instead.
    if (resumed) await oldestUnknownGauge(metrics);
    const page = await reconcilePageFrom(reconciler, passed ?? resumed, resumed !== undefined);
    await runCursor.save(page.cursor, Date.now());
    if (resumed) logger.info('reconcile run resumed where the last one stopped');
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
    publishMetrics(metrics);
  }
};

/** A saved cursor the ledger can no longer read (e.g. written by an older release) restarts the cycle. */
const reconcilePageFrom = async (reconciler: Reconciler, cursor: string | undefined, saved: boolean) => {
  try {
    return await reconciler.reconcilePage(cursor);
  } catch (error) {
    if (!saved || !(error instanceof RangeError)) throw error;
    logger.warn('saved reconcile cursor unreadable; starting from the oldest row');
    return reconciler.reconcilePage();
  }
};

const oldestUnknownGauge = async (sink: Metrics): Promise<void> => {
  const [oldest] = (await ledger.listAttention('unknown', { limit: 1 })).items;
  const since = oldest?.attnAt ?? oldest?.updatedAt;
  powertoolsSink(sink).gauge?.(
    METRIC.oldestUnknownAgeSeconds,
    since === undefined ? 0 : Math.max(0, Math.floor((Date.now() - since) / 1000)),
  );
};
