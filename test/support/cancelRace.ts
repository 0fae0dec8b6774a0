import { parentPort, workerData } from 'node:worker_threads';
import pLimit from 'p-limit';
import { UriAttachmentStore } from '../../lib/attachments/AttachmentStore.js';
import { dynamoDocumentClient } from '../../lib/aws/clients.js';
import { Dispatcher } from '../../lib/dispatch/Dispatcher.js';
import { systemClock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { DynamoSuppressionList } from '../../lib/ledger/DynamoSuppressionList.js';
import { localSealer } from '../../lib/seal/IntentSealer.js';
import { FileTemplateStore } from '../../lib/templates/FileTemplateStore.js';
import { RestTransport } from '../../lib/transports/RestTransport.js';
import { TEST_SEAL_KEY } from './sealKey.js';

/**
 * One dispatch worker of the cancel race, in its own thread with its own DynamoDB client: it handles its
 * share of a fan-out's intents (a few at a time, as a Lambda batch would) with the real dispatcher,
 * real templates and the provider simulator over HTTP, on the system clock.
 */
interface RaceInput {
  endpoint: string;
  table: string;
  suppressionTable: string;
  simUrl: string;
  workerId: string;
  bodies: string[];
}

const { endpoint, table, suppressionTable, simUrl, workerId, bodies } = workerData as RaceInput;
const doc = dynamoDocumentClient({ region: 'us-east-1', endpoint });
const quiet = { info: () => {}, warn: () => {}, error: () => {} };
const dispatcher = new Dispatcher({
  ledger: new DynamoLedger(doc, table),
  suppressions: new DynamoSuppressionList(doc, suppressionTable),
  renderer: new FileTemplateStore(),
  transports: {
    email: new RestTransport({ baseUrl: simUrl, channel: 'email' }),
    sms: new RestTransport({ baseUrl: simUrl, channel: 'sms' }),
  },
  attachments: new UriAttachmentStore(),
  purposes: new PurposeRegistry(),
  clock: systemClock,
  contentHashKey: 'test-content-hash-key-0123456789',
  sealer: localSealer(Buffer.from(TEST_SEAL_KEY, 'utf8')),
  workerId,
  leaseMs: 60_000,
  logger: quiet,
});
const limit = pLimit(4);
const outcomes = await Promise.all(
  bodies.map((body, i) =>
    limit(async () => {
      const out = await dispatcher.handle(body, { messageId: `${workerId}-${i}`, receiveCount: 1 });
      return out.channels.map((c) => ({ dedupeKey: c.dedupeKey, state: c.state, action: c.action }));
    }),
  ),
);
parentPort!.postMessage({ workerId, outcomes: outcomes.flat() });
