import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { UriAttachmentStore } from '../../lib/attachments/AttachmentStore.js';
import { Dispatcher, type DispatcherDeps, type EdgeProbe } from '../../lib/dispatch/Dispatcher.js';
import type { Clock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../lib/ledger/DynamoOperatorQueries.js';
import { DynamoSuppressionList } from '../../lib/ledger/DynamoSuppressionList.js';
import { Sweeper } from '../../lib/reconcile/Sweeper.js';
import { localSealer } from '../../lib/seal/IntentSealer.js';
import type { RunningProviderSimulator } from '../../lib/simulator/ProviderSimulator.js';
import { FileTemplateStore } from '../../lib/templates/FileTemplateStore.js';
import type { Transport } from '../../lib/transports/port.js';
import { RestTransport } from '../../lib/transports/RestTransport.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from './dynamo.js';
import { TEST_LABEL_SECRET } from './evidenceLabels.js';
import { TEST_SEAL_KEY } from './sealKey.js';

/** The dispatcher's content-hash secret in tests; provider labels are sealed under keys derived from it. */
export const CONTENT_KEY = TEST_LABEL_SECRET;

/** Collects log lines so tests can assert that no secret reached a log. */
export class CapturingLogger {
  readonly lines: string[] = [];
  debug = (message: string, ...extra: Array<Record<string, unknown>>) =>
    this.lines.push(JSON.stringify({ level: 'debug', message, extra }));
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
  const ledger = new DynamoLedger(doc, table);
  const suppressions = new DynamoSuppressionList(doc, suppressionTable);
  const logger = new CapturingLogger();
  const sleeps: number[] = [];
  const renderer = new FileTemplateStore();
  const sealer = localSealer(Buffer.from(TEST_SEAL_KEY, 'utf8'));
  const transports = {
    email: new RestTransport({ baseUrl: sim.url, channel: 'email' }),
    sms: new RestTransport({ baseUrl: sim.url, channel: 'sms' }),
  };
  return {
    ledger,
    queries: new DynamoOperatorQueries(doc, table),
    suppressions,
    table,
    logger,
    sleeps,
    transports,
    dispatcher: ({ workerId = 'dispatch:test', probe, clock: c = clock, realSleep = false, ...rest } = {}) =>
      new Dispatcher({
        ledger: new DynamoLedger(localDynamo().doc, table),
        suppressions,
        renderer,
        transports,
        attachments: new UriAttachmentStore(),
        purposes: new PurposeRegistry(),
        clock: c,
        contentHashKey: CONTENT_KEY,
        sealer,
        workerId,
        leaseMs: 60_000,
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
export const pdfAttachment = (content = '%PDF-1.4 report 42\n') => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-att-'));
  const path = join(dir, 'report-42.pdf');
  writeFileSync(path, content);
  return {
    uri: pathToFileURL(path).href,
    sha256: createHash('sha256').update(content).digest('hex'),
    filename: 'report-42.pdf',
    contentType: 'application/pdf',
  };
};

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

export const restTransports = (sim: RunningProviderSimulator) => ({
  email: new RestTransport({ baseUrl: sim.url, channel: 'email' }),
  sms: new RestTransport({ baseUrl: sim.url, channel: 'sms' }),
});

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
