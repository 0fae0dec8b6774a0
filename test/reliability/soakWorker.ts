/**
 * A second dispatcher process for the soak: the same function handler as the local stack's functions
 * worker, polling the same queue with the same environment, but without an archiver (one stream reader
 * is enough). Two processes, two pollers each: four concurrent consumers racing over the same intents.
 *
 *   node --import tsx test/reliability/soakWorker.ts     (environment: the local stack's `env`)
 */
import { sqsClient } from '../../lib/aws/clients.js';
import { loadConfig } from '../../lib/config.js';
import { type SqsBatchHandler, SqsPoller } from '../../lib/local/SqsPoller.js';

const config = loadConfig();
if (!config.queueUrl || !config.endpointSqs) throw new Error('the soak worker needs the queue settings');
const { handler } = await import('../../functions/dispatch/index.js');
const poller = new SqsPoller({
  // What Lambda's SQS event source does for the dispatcher, on its role (command recorder).
  sqs: sqsClient({
    region: config.region,
    endpoint: config.endpointSqs,
    caller: { function: 'dispatch', via: 'event-source', settings: config },
  }),
  queueUrl: config.queueUrl,
  handler: (event, context) => handler(event, context, () => undefined) as ReturnType<SqsBatchHandler>,
  region: config.region,
  functionName: 'sendproof-dispatch-soak',
  pollers: 2,
  onError: (error) =>
    process.stderr.write(
      `${JSON.stringify({ level: 'ERROR', message: 'soak poller error', error: String(error) })}\n`,
    ),
});
await poller.start();

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  await poller.stop();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
process.on('disconnect', shutdown);
process.send?.({ ready: true });
