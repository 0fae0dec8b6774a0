/**
 * A dispatcher in its own process, for the crash matrix (test/reliability/crashMatrix.test.ts).
 *
 *   node --import tsx test/support/crashWorker.ts '<json CrashWorkerInput>'
 *
 * (The matrix runs an esbuild bundle of this file: same code, a third of tsx's start-up CPU, which
 * matters for 22 processes on 2 cores.)
 *
 * - With `crash`: handles the one intent and, when the dispatch reaches the named edge on the named
 *   channel, kills its own process with SIGKILL — no finally blocks, no flushes, exactly as a Lambda
 *   environment that runs out of memory or is torn down. Reaching the end instead exits 3.
 * - Without `crash`: replays every intent, each one delivered up to `rounds` times (as SQS would
 *   redeliver a message reported as a batch item failure), and prints one JSON line with the outcome
 *   of every round of every intent, including whether an SMS row existed while the email row was
 *   unknown. Import only its types: importing the module runs it.
 *
 * Real components only: DynamoDB Local (the test's tables), the committed templates, the REST transport
 * over HTTP to the provider simulator, attachments from disk, the system clock (real leases).
 */
import { UriAttachmentStore } from '../../lib/attachments/AttachmentStore.js';
import { dynamoDocumentClient } from '../../lib/aws/clients.js';
import { type DispatchEdge, Dispatcher, type IntentOutcome } from '../../lib/dispatch/Dispatcher.js';
import { systemClock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { DynamoSuppressionList } from '../../lib/ledger/DynamoSuppressionList.js';
import { localSealer } from '../../lib/seal/IntentSealer.js';
import { FileTemplateStore } from '../../lib/templates/FileTemplateStore.js';
import { RestTransport } from '../../lib/transports/RestTransport.js';
import { TEST_SEAL_KEY } from './sealKey.js';

export interface CrashWorkerInput {
  endpoint: string;
  table: string;
  suppressionTable: string;
  simulatorUrl: string;
  workerId: string;
  leaseMs: number;
  contentHashKey: string;
  /** The committed templates folder (a bundled copy of this worker cannot find it relative to itself). */
  templatesDir: string;
  /** Queue bodies (JSON intents). */
  bodies: string[];
  crash?: { edge: DispatchEdge; channel: 'email' | 'sms' };
  /** Deliveries per intent in replay mode (stops early once the disposition is `done`). */
  rounds?: number;
}

export interface RoundReport {
  disposition: IntentOutcome['disposition'];
  channels: Array<{ channel: string; state: string; action: string }>;
  /** Fallback only: an SMS row existed after this round while the email row was unknown. */
  smsWhileEmailUnknown?: boolean;
}

export interface ReplayReport {
  index: number;
  rounds: RoundReport[];
  error?: string;
}

const input = JSON.parse(process.argv[2] ?? '{}') as CrashWorkerInput;
const doc = dynamoDocumentClient({ region: 'us-east-1', endpoint: input.endpoint });
const ledger = new DynamoLedger(doc, input.table);
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
const crash = input.crash;

const dispatcher = new Dispatcher({
  ledger,
  suppressions: new DynamoSuppressionList(doc, input.suppressionTable),
  renderer: new FileTemplateStore(input.templatesDir),
  transports: {
    email: new RestTransport({ baseUrl: input.simulatorUrl, channel: 'email' }),
    sms: new RestTransport({ baseUrl: input.simulatorUrl, channel: 'sms' }),
  },
  attachments: new UriAttachmentStore(),
  purposes: new PurposeRegistry(),
  clock: systemClock,
  contentHashKey: input.contentHashKey,
  sealer: localSealer(Buffer.from(TEST_SEAL_KEY, 'utf8')),
  workerId: input.workerId,
  leaseMs: input.leaseMs,
  logger: silent,
  random: () => 0.5,
  ...(crash
    ? {
        probe: (edge: DispatchEdge, context: { channel: string }) => {
          if (edge === crash.edge && context.channel === crash.channel) process.kill(process.pid, 'SIGKILL');
        },
      }
    : {}),
});

const smsWhileEmailUnknown = async (outcome: IntentOutcome): Promise<boolean | undefined> => {
  const email = outcome.channels.find((c) => c.channel === 'email');
  if (!email) return undefined;
  const emailRow = await ledger.get(email.dedupeKey, true);
  if (emailRow?.state !== 'unknown') return false;
  const smsKey = email.dedupeKey.replace(/:email(?=:|$)/, ':sms');
  return (await ledger.get(smsKey, true)) !== undefined;
};

if (crash) {
  await dispatcher.handle(input.bodies[0]!, { messageId: `crash-${input.workerId}` });
  // The edge was never reached: the parent sees exit code 3 instead of SIGKILL and fails the case.
  process.exit(3);
}

const reports = await Promise.all(
  input.bodies.map(async (body, index): Promise<ReplayReport> => {
    const rounds: RoundReport[] = [];
    try {
      for (let round = 0; round < (input.rounds ?? 3); round += 1) {
        const outcome = await dispatcher.handle(body, {
          messageId: `replay-${index}`,
          receiveCount: round + 2,
        });
        const check = await smsWhileEmailUnknown(outcome);
        rounds.push({
          disposition: outcome.disposition,
          channels: outcome.channels.map((c) => ({ channel: c.channel, state: c.state, action: c.action })),
          ...(check !== undefined ? { smsWhileEmailUnknown: check } : {}),
        });
        if (outcome.disposition === 'done') break;
      }
      return { index, rounds };
    } catch (error) {
      return {
        index,
        rounds,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      };
    }
  }),
);
process.stdout.write(`${JSON.stringify(reports)}\n`);
process.exit(0);
