/**
 * The local stack's "Lambda service": a child process that runs the real function handlers against the
 * local servers. Its stdout/stderr (Powertools logs and EMF metrics) go to a log file, which is exactly
 * what a secret scan of "everything the functions wrote" must read.
 *
 *   SQS (fauxqs) ──poll──► functions/dispatch handler ──► DynamoDB Local ──stream──► archiver ──► S3 + mirror
 *   timer (as EventBridge Scheduler → Step Functions) ──► functions/reconcile handler, page by page
 *   DynamoDB Local ──stream──► outcome events (the local event bus: a JSON Lines file + caller endpoints)
 *                                                                       and SLO metrics (EMF, as in AWS)
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { failureMessageOf } from '../archive/backfill.js';
import { startLocalArchive } from '../archive/LocalArchive.js';
import { sqsClient } from '../aws/clients.js';
import { loadConfig, requireSettings } from '../config.js';
import { systemClock } from '../domain/clock.js';
import { archiveRetentionDaysOf, PurposeRegistry } from '../domain/purposes.js';
import { webhookSecretsFor } from '../evidence/webhookSecrets.js';
import { evidenceRecorderFor, optSignalsFor } from '../evidenceWiring.js';
import { SERVICE_NAME } from '../observability.js';
import { LOCAL_TIMING } from '../queueDefinition.js';
import { localLambdaContext } from './lambdaContext.js';
import { startLocalOutcomes } from './localOutcomes.js';
import { SqsPoller } from './SqsPoller.js';

const config = requireSettings(loadConfig(), [
  'ledgerTable',
  'queueUrl',
  'endpointDynamoDb',
  'endpointSqs',
  'endpointS3',
  'archiveBucket',
]);
const logger = new Logger({ serviceName: SERVICE_NAME });

// SES events: the emitter in front of aws-ses-v2-local feeds what SES would publish to EventBridge to the
// evidence function, as the EventBridge rule does in AWS. Started before the dispatcher sends anything.
const sesEmitter =
  config.localSesEmitterPort && config.localSesUpstream
    ? await (async () => {
        const { handler: evidence } = await import('../../functions/evidence/index.js');
        const { startSesEventEmitter } = await import('./SesEventEmitter.js');
        return startSesEventEmitter({
          upstream: config.localSesUpstream!,
          port: config.localSesEmitterPort!,
          region: config.region,
          deliver: async (event) => {
            await evidence(event, localLambdaContext('sendproof-evidence-local', config.region));
          },
          onError: (error) => logger.error('SES event delivery failed', { error: String(error) }),
        });
      })()
    : undefined;

// Importing the entry module runs its cold-start code with this process's environment, as Lambda would.
const { handler: dispatch } = await import('../../functions/dispatch/index.js');
const poller = new SqsPoller({
  // What Lambda's SQS event source does for the dispatcher, on the dispatcher's role.
  sqs: sqsClient({
    region: config.region,
    endpoint: config.endpointSqs,
    caller: { function: 'dispatch', via: 'event-source', settings: config },
  }),
  queueUrl: config.queueUrl,
  handler: async (event, context) => (await dispatch(event, context, () => undefined)) ?? undefined,
  region: config.region,
  functionName: 'sendproof-dispatch-local',
  pollers: 2,
  onError: (error) => logger.error('dispatch poller error', { error: String(error) }),
});
await poller.start();

const archive = await startLocalArchive({
  region: config.region,
  dynamoEndpoint: config.endpointDynamoDb,
  s3Endpoint: config.endpointS3,
  ledgerTable: config.ledgerTable,
  bucket: config.archiveBucket,
  mirrorDir: config.archiveMirrorDir ?? '.local/archive',
  logger,
  intervalMs: 250,
  // As the AWS event source: 10 retries, then the batch's coordinates go to the failure queue.
  retryAttempts: 10,
  onFailure: async (batch) => {
    if (!config.archiveFailuresUrl) {
      logger.error('archive batch given up and no failure queue to record it', { ...batch });
      return;
    }
    // The stream event source's on-failure destination: Lambda sends it on the archiver's role.
    await sqsClient({
      region: config.region,
      endpoint: config.endpointSqs,
      caller: { function: 'archive', via: 'event-source', settings: config },
    }).send(
      new SendMessageCommand({ QueueUrl: config.archiveFailuresUrl, MessageBody: failureMessageOf(batch) }),
    );
  },
  retentionDaysOf: archiveRetentionDaysOf(
    PurposeRegistry.withOverrides(config.purposes),
    config.archiveRetentionDays ?? 365,
  ),
});

// Outcome events: the same consumer as functions/outcomes, on its own reader of the stream (as in AWS,
// where it is a second event source on the table), publishing to the local event bus instead of EventBridge.
const outcomes = config.localEventsDir
  ? await startLocalOutcomes({
      region: config.region,
      dynamoEndpoint: config.endpointDynamoDb,
      ledgerTable: config.ledgerTable,
      eventsDir: config.localEventsDir,
      endpoints: config.localEventEndpoints,
      purposes: PurposeRegistry.withOverrides(config.purposes),
      logger,
    })
  : undefined;

// The evidence endpoint (the Function URL's handler), for signed Resend/Twilio/SendGrid webhooks.
const webhook = config.localWebhookPort
  ? await (await import('./WebhookServer.js')).startWebhookServer(
      {
        recorder: evidenceRecorderFor({ ...config, functionName: 'webhook' }, { clock: systemClock, logger }),
        secrets: webhookSecretsFor(config),
        logger,
        signals: optSignalsFor({ ...config, functionName: 'webhook' }, { clock: systemClock, logger }),
      },
      { port: config.localWebhookPort },
    )
  : undefined;

// The scheduled reconcile workflow: invoke page after page while the handler says more remain (bounded
// like the state machine's loop), then wait for the next tick.
const { handler: reconcile } = await import('../../functions/reconcile/index.js');
let reconciling: Promise<void> = Promise.resolve();
const reconcileRun = async () => {
  let cursor: string | undefined;
  for (let page = 0; page < 50; page++) {
    const result = await reconcile(
      cursor ? { cursor } : {},
      localLambdaContext('sendproof-reconcile-local', config.region),
    );
    if (!result.hasMore || !result.cursor) return;
    cursor = result.cursor;
  }
};
const timer = setInterval(() => {
  reconciling = reconciling
    .then(reconcileRun)
    .catch((error) => logger.error('reconcile run failed', { error: String(error) }));
}, LOCAL_TIMING.reconcileEveryMs);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  // Writers first; then one last stream round so every transition already in the ledger is archived.
  await Promise.allSettled([poller.stop(), reconciling, webhook?.stop()]);
  await sesEmitter?.stop().catch(() => undefined);
  await archive.stop();
  await outcomes
    ?.stop()
    .catch((error) => logger.error('final outcome events round failed', { error: String(error) }));
  await archive
    .pollOnce()
    .then(() => archive.flush())
    .catch((error) => logger.error('final archive round failed', { error: String(error) }));
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
process.on('disconnect', shutdown);
process.send?.({ ready: true });
