import pLimit from 'p-limit';
import { UriAttachmentStore } from '../../lib/attachments/AttachmentStore.js';
import { dynamoDocumentClient } from '../../lib/aws/clients.js';
import { type ChannelOutcome, Dispatcher, type IntentOutcome } from '../../lib/dispatch/Dispatcher.js';
import type { Clock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { DynamoSuppressionList } from '../../lib/ledger/DynamoSuppressionList.js';
import { Admission } from '../../lib/rate/Admission.js';
import { Pacer, TokenSlots } from '../../lib/rate/Pacer.js';
import { SpendBreaker } from '../../lib/rate/SpendBreaker.js';
import { type RateSettingsInput, rateSettingsSchema } from '../../lib/rate/settings.js';
import { localSealer } from '../../lib/seal/IntentSealer.js';
import { FileTemplateStore } from '../../lib/templates/FileTemplateStore.js';
import { RestTransport } from '../../lib/transports/RestTransport.js';
import { TEST_SEAL_KEY } from './sealKey.js';

/** What one rate-control dispatcher is built from: plain data, so a worker thread can get it too. */
export interface RateWorkerSpec {
  endpoint: string;
  table: string;
  suppressionTable: string;
  simUrl: string;
  workerId: string;
  rate?: RateSettingsInput;
  /** Purpose policies over the built-ins (PurposeRegistry.withOverrides). */
  purposes?: unknown[];
  /** The dispatch lease (default 60 s); a redelivery that finds a row in flight comes back after it. */
  leaseMs?: number;
}

export interface RateWorker {
  dispatcher: Dispatcher;
  slots?: TokenSlots;
  pacer?: Pacer;
}

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * One execution environment as production wires it: its own DynamoDB client, pacer and breaker over the
 * shared tables, the committed templates, the REST transport to the provider simulator (a test double).
 */
export const rateWorker = (spec: RateWorkerSpec, clock: Clock): RateWorker => {
  const doc = dynamoDocumentClient({ region: 'us-east-1', endpoint: spec.endpoint });
  const now = () => clock.now();
  const slots = spec.rate ? new TokenSlots(doc, spec.table) : undefined;
  const pacer =
    spec.rate && slots
      ? new Pacer({ slots, settings: rateSettingsSchema().parse(spec.rate), now })
      : undefined;
  const admission = new Admission({
    ...(pacer ? { pacer } : {}),
    breaker: new SpendBreaker(doc, spec.table, { workerId: spec.workerId }),
    now,
  });
  const dispatcher = new Dispatcher({
    ledger: new DynamoLedger(doc, spec.table),
    suppressions: new DynamoSuppressionList(doc, spec.suppressionTable),
    renderer: new FileTemplateStore(),
    transports: {
      email: new RestTransport({ baseUrl: spec.simUrl, channel: 'email' }),
      sms: new RestTransport({ baseUrl: spec.simUrl, channel: 'sms' }),
    },
    attachments: new UriAttachmentStore(),
    purposes: PurposeRegistry.withOverrides(spec.purposes ?? []),
    clock,
    contentHashKey: 'test-content-hash-key-0123456789',
    sealer: localSealer(Buffer.from(TEST_SEAL_KEY, 'utf8')),
    workerId: spec.workerId,
    leaseMs: spec.leaseMs ?? 60_000,
    logger: quiet,
    admission,
  });
  return { dispatcher, ...(slots ? { slots } : {}), ...(pacer ? { pacer } : {}) };
};

/**
 * The intake queue in memory: each worker pulls concurrently, `concurrency` records at a time; a message
 * that must come back is received again after its visibility (the dispatcher's `visibleAfterMs`).
 */
export const drain = async (
  bodies: string[],
  workers: Array<Pick<RateWorker, 'dispatcher'>>,
  concurrency: number,
): Promise<Map<string, IntentOutcome>> => {
  const queue = bodies.map((body, i) => ({ body, id: `m-${i}`, receives: 0, visibleAt: 0 }));
  const outcomes = new Map<string, IntentOutcome>();
  let open = queue.length;
  await Promise.all(
    workers.map(async (w) => {
      const limit = pLimit(concurrency);
      const loop = async (): Promise<void> => {
        while (open > 0) {
          const now = Date.now();
          const index = queue.findIndex((m) => m.visibleAt <= now);
          if (index < 0) {
            await new Promise((r) => setTimeout(r, 20));
            continue;
          }
          const [message] = queue.splice(index, 1);
          if (!message) continue;
          message.receives += 1;
          const outcome = await w.dispatcher.handle(message.body, {
            messageId: message.id,
            receiveCount: message.receives,
          });
          outcomes.set(message.id, outcome);
          if (outcome.disposition === 'retry_later') {
            message.visibleAt = Date.now() + Math.max(1, outcome.visibleAfterMs ?? 1000);
            queue.push(message);
          } else open -= 1;
        }
      };
      await Promise.all(Array.from({ length: concurrency }, () => limit(loop)));
    }),
  );
  return outcomes;
};

export interface ThreadReport {
  workerId: string;
  channels: ChannelOutcome[];
  slotWriteUnits: number;
}
