/**
 * The local stack's "Lambda service": a child process that runs the real function handlers against the
 * local servers. Its stdout/stderr (Powertools logs and EMF metrics) go to a log file, which is exactly
 * what a secret scan of "everything the functions wrote" must read.
 *
 *   SQS (fauxqs) ──poll──► functions/dispatch handler ──► DynamoDB Local ──stream──► archiver ──► S3 + mirror
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { startLocalArchive } from '../archive/LocalArchive.js';
import { sqsClient } from '../aws/clients.js';
import { loadConfig } from '../config.js';
import { SERVICE_NAME } from '../observability.js';
import { SqsPoller } from './SqsPoller.js';

const config = loadConfig();
const logger = new Logger({ serviceName: SERVICE_NAME });
if (!config.queueUrl || !config.endpointDynamoDb || !config.endpointS3 || !config.archiveBucket) {
  throw new Error('the local functions worker needs queue, DynamoDB, S3 and bucket settings');
}

// Importing the entry module runs its cold-start code with this process's environment, as Lambda would.
const { handler: dispatch } = await import('../../functions/dispatch/index.js');
const poller = new SqsPoller({
  sqs: sqsClient({ region: config.region, endpoint: config.endpointSqs! }),
  queueUrl: config.queueUrl,
  handler: (event, context) => dispatch(event, context, () => undefined) as Promise<void>,
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
});

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  await Promise.allSettled([poller.stop(), archive.stop()]);
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
process.on('disconnect', shutdown);
process.send?.({ ready: true });
