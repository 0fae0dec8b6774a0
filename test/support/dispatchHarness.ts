import { pdfOnDisk } from '../../harness/attachments.js';
import { localAdapters, restTransports as restTransportsAt } from '../../harness/dispatcher.js';
import { Dispatcher, type DispatcherDeps, type EdgeProbe } from '../../lib/dispatch/Dispatcher.js';
import type { Clock } from '../../lib/domain/clock.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../lib/ledger/DynamoOperatorQueries.js';
import type { DynamoSuppressionList } from '../../lib/ledger/DynamoSuppressionList.js';
import { Sweeper } from '../../lib/reconcile/Sweeper.js';
import type { RunningProviderSimulator } from '../../lib/simulator/ProviderSimulator.js';
import type { Transport } from '../../lib/transports/port.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from './dynamo.js';
import { TEST_LABEL_SECRET } from './evidenceLabels.js';
import { TEST_SEAL_KEY } from './sealKey.js';

/** The dispatcher's content-hash secret in tests; provider labels are sealed under keys derived from it. */
export const CONTENT_KEY = TEST_LABEL_SECRET;

/** Collects log lines so tests can assert that no secret reached a log. */
export class CapturingLogger {
  readonly lines: string[] = [];
  info = (message: string, ...extra: Array<Record<string, unknown>>) =>
    this.lines.push(JSON.stringify({ level: 'info', message, extra }));
  warn = (message: string, ...extra: Array<Record<string, unknown>>) =>
    this.lines.push(JSON.stringify({ level: 'warn', message, extra }));
  error = (message: string, ...extra: Array<Record<string, unknown>>) =>
    this.lines.push(JSON.stringify({ level: 'error', message, extra }));
}

export interface Harness {
  ledger: DynamoLedger;
  /** Operator scans over the same table (findByEvent). */
  queries: DynamoOperatorQueries;
  suppressions: DynamoSuppressionList;
  table: string;
  logger: CapturingLogger;
  sleeps: number[];
  transports: Readonly<Record<'email' | 'sms', Transport>>;
  dispatcher(
    options?: {
      workerId?: string;
      probe?: EdgeProbe;
      clock?: Clock;
      realSleep?: boolean;
    } & Partial<DispatcherDeps>,
  ): Dispatcher;
}

/**
 * Real components end to end: DynamoDB Local tables (fresh per harness), the committed templates,
 * the REST transport over HTTP to the provider simulator (a test double), attachments from disk.
 */
export const createHarness = async (sim: RunningProviderSimulator, clock: Clock): Promise<Harness> => {
  const { raw, doc } = localDynamo();
  const table = await createLedgerTable(raw, 'dispatch');
  const suppressionTable = await createSuppressionTable(raw);
  // Per-record gate reads: the batch read (gateFacts) is the cost-floor tests' subject, not the harness's.
  const { gateFacts: _batchReads, ...adapters } = localAdapters({
    doc,
    ledgerTable: table,
    suppressionTable,
    sealKey: TEST_SEAL_KEY,
  });
  const logger = new CapturingLogger();
  const sleeps: number[] = [];
  const transports = restTransports(sim);
  return {
    ledger: adapters.ledger,
    queries: new DynamoOperatorQueries(doc, table),
    suppressions: adapters.suppressions,
    table,
    logger,
    sleeps,
    transports,
    dispatcher: ({ workerId = 'dispatch:test', probe, clock: c = clock, realSleep = false, ...rest } = {}) =>
      new Dispatcher({
        ...adapters,
        // Its own client, as another worker process would have.
        ledger: new DynamoLedger(localDynamo().doc, table),
        transports,
        clock: c,
        contentHashKey: CONTENT_KEY,
        workerId,
        logger,
        random: () => 0.5,
        sleep: async (ms) => {
          sleeps.push(ms);
          if (realSleep) await new Promise((r) => setTimeout(r, ms));
        },
        ...(probe ? { probe } : {}),
        ...rest,
      }),
  };
};

/** Writes a small "PDF" to a temp file and returns an attachment reference with its real checksum. */
export const pdfAttachment = (content = '%PDF-1.4 report 42\n') =>
  pdfOnDisk({ content, filename: 'report-42.pdf', dirPrefix: 'sendproof-att-' });

/** A crash at a named edge: the probe throws, as a process death would stop the worker there. */
export class SimulatedCrash extends Error {}
export const crashAt =
  (edge: string): EdgeProbe =>
  (e) => {
    if (e === edge) throw new SimulatedCrash(`crashed at ${edge}`);
  };

/** The same HTTP transport, declared as a provider without idempotency keys (as SES, SMS v2, Twilio are). */
export const withoutKeyEnforcement = (transport: Transport): Transport => ({
  name: transport.name,
  channel: transport.channel,
  capabilities: { ...transport.capabilities, idempotencyKey: false, keyRetentionSeconds: 0 },
  send: (message, key) => transport.send(message, key),
});

/** The REST transports over HTTP to the simulator (harness/dispatcher.ts). */
export const restTransports = (sim: RunningProviderSimulator) => restTransportsAt(sim.url);

/**
 * The intake queue as the sweep sees it, in memory: resume notices it publishes are kept in order, and
 * `deliver` hands each to a dispatcher exactly as the queue would (the dispatcher still opens the seal).
 */
export class NoticeQueue {
  readonly bodies: string[] = [];
  publish = async (body: string) => {
    this.bodies.push(body);
    return { messageId: `notice-${this.bodies.length}` };
  };
  /** Delivers every notice published so far, once, and returns the dispatchers' outcomes. */
  async deliver(dispatcher: Dispatcher): Promise<Awaited<ReturnType<Dispatcher['handle']>>[]> {
    const pending = this.bodies.splice(0);
    const outcomes = [];
    for (const [i, body] of pending.entries())
      outcomes.push(await dispatcher.handle(body, { messageId: `notice-${i}` }));
    return outcomes;
  }
}

/** The ledger's sweep against the harness's table, with short times so a test can step through it. */
export const sweeperFor = (
  h: Harness,
  clock: Clock,
  notices: NoticeQueue,
  options: {
    transports?: Readonly<Record<'email' | 'sms', Transport>>;
    graceMs?: number;
    recheckMs?: number;
  } = {},
) =>
  new Sweeper({
    ledger: h.ledger,
    transports: options.transports ?? h.transports,
    clock,
    publisher: notices,
    runId: 'test',
    graceMs: options.graceMs ?? 1_000,
    recheckMs: options.recheckMs ?? 60_000,
  });
