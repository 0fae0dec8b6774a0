/**
 * A dispatcher in its own process, for the crash matrix (test/reliability/crashMatrix.test.ts).
 *
 *   node --import tsx test/support/crashWorker.ts '<json CrashWorkerInput>'
 *
 * (The matrix runs an esbuild bundle of this file: same code, a third of tsx's start-up CPU, which
 * matters for 22 processes on 2 cores.)
 *
 * - With `crash`: handles the one intent (delivered up to `rounds` times, default once) and, when the
 *   dispatch reaches the named edge on the named channel for the `occurrence`-th time, kills its own
 *   process with SIGKILL — no finally blocks, no flushes, exactly as a Lambda environment that runs
 *   out of memory or is torn down. Reaching the end instead exits 3. `receiveCount` is the first
 *   delivery's ApproximateReceiveCount: with the queue's maxReceiveCount it is the last receive.
 * - Without `crash`: replays every intent, each one delivered up to `rounds` times (as SQS would
 *   redeliver a message reported as a batch item failure), and prints one JSON line with the outcome
 *   of every round of every intent, including whether an SMS row existed while the email row was
 *   unknown. Import only its types: importing the module runs it.
 * - In both modes a `retry_later` outcome is honoured as the SQS handler's visibility change would:
 *   the next delivery comes `visibleAfterMs` later, and one due later than `maxWaitMs` is not waited
 *   for (the round stops; that message would come back long after this process).
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
  crash?: { edge: DispatchEdge; channel: 'email' | 'sms'; occurrence?: number };
  /** Deliveries per intent (stops early once the disposition is `done`). Default: 3 replaying, 1 crashing. */
  rounds?: number;
  /** The first delivery's receive count (crash mode). Default 1. */
  receiveCount?: number;
  /** The queue's maxReceiveCount, as the dispatch function gets it. */
  maxReceiveCount?: number;
  /** The dispatcher's inline retry budget (a longer Retry-After is parked). */
  inlineRetryBudgetMs?: number;
  /** The longest `visibleAfterMs` waited for between two deliveries. Default 3000. */
  maxWaitMs?: number;
  /**
   * Start up, then wait for one line on stdin before the first delivery: the test starts the process
   * early and says "go" the moment the redelivery is due, so start-up time on a busy machine does not
   * decide whether the redelivery comes before or after a Retry-After.
   */
  waitForGo?: boolean;
}

export interface RoundReport {
  disposition: IntentOutcome['disposition'];
  visibleAfterMs?: number;
  /** When this delivery was handled (epoch ms). */
  at: number;
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
// The dispatcher's code in its own process: its commands are the dispatch function's (command recorder).
const doc = dynamoDocumentClient({
  region: 'us-east-1',
  endpoint: input.endpoint,
  caller: {
    function: 'dispatch',
    settings: { ledgerTable: input.table, suppressionTable: input.suppressionTable },
  },
});
const ledger = new DynamoLedger(doc, input.table);
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
const crash = input.crash;
let reached = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  ...(input.maxReceiveCount !== undefined ? { maxReceiveCount: input.maxReceiveCount } : {}),
  ...(input.inlineRetryBudgetMs !== undefined ? { inlineRetryBudgetMs: input.inlineRetryBudgetMs } : {}),
  ...(crash
    ? {
        probe: (edge: DispatchEdge, context: { channel: string }) => {
          if (edge !== crash.edge || context.channel !== crash.channel) return;
          reached += 1;
          if (reached >= (crash.occurrence ?? 1)) process.kill(process.pid, 'SIGKILL');
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

/**
 * Delivers one body up to `rounds` times, as the queue would: the next delivery after a `retry_later`
 * comes when the outcome says it is due (the SQS handler moves the message's visibility there).
 */
const deliver = async (
  body: string,
  index: number,
  rounds: number,
  firstReceive: number,
  report: RoundReport[] = [],
) => {
  for (let round = 0; round < rounds; round += 1) {
    const at = Date.now();
    const outcome = await dispatcher.handle(body, {
      messageId: `${crash ? 'crash' : 'replay'}-${input.workerId}-${index}`,
      receiveCount: firstReceive + round,
    });
    const check = crash ? undefined : await smsWhileEmailUnknown(outcome);
    report.push({
      disposition: outcome.disposition,
      at,
      ...(outcome.visibleAfterMs !== undefined ? { visibleAfterMs: outcome.visibleAfterMs } : {}),
      channels: outcome.channels.map((c) => ({ channel: c.channel, state: c.state, action: c.action })),
      ...(check !== undefined ? { smsWhileEmailUnknown: check } : {}),
    });
    if (outcome.disposition === 'done') break;
    const wait = outcome.visibleAfterMs ?? 0;
    if (wait > (input.maxWaitMs ?? 3_000)) break;
    await sleep(wait);
  }
  return report;
};

if (input.waitForGo)
  await new Promise<void>((go) => {
    process.stdin.once('data', () => go());
  });

if (crash) {
  await deliver(input.bodies[0]!, 0, input.rounds ?? 1, input.receiveCount ?? 1);
  // The edge was never reached: the parent sees exit code 3 instead of SIGKILL and fails the case.
  process.exit(3);
}

const reports = await Promise.all(
  input.bodies.map(async (body, index): Promise<ReplayReport> => {
    const rounds: RoundReport[] = [];
    try {
      await deliver(body, index, input.rounds ?? 3, 2, rounds);
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
