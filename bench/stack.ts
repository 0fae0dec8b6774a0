import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DeleteTableCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { pdfOnDisk } from '../harness/attachments.js';
import { CapacityMeter } from '../harness/CapacityMeter.js';
import { localAdapters, restTransports } from '../harness/dispatcher.js';
import { dynamoClient, dynamoDocumentClient } from '../lib/aws/clients.js';
import { buildClaimRecord } from '../lib/dispatch/claimRecord.js';
import { Dispatcher } from '../lib/dispatch/Dispatcher.js';
import { systemClock } from '../lib/domain/clock.js';
import { type IntentInput, parseIntent } from '../lib/domain/intent.js';
import { PurposeRegistry } from '../lib/domain/purposes.js';
import type { DeliveryRecord, Ledger } from '../lib/ledger/port.js';
import { ledgerCreateTableInput, suppressionCreateTableInput } from '../lib/ledger/tableDefinition.js';
import { type RunningDynamoDbLocal, startDynamoDbLocal } from '../lib/local/DynamoDbLocal.js';
import { stopChildProcess } from '../lib/local/processes.js';
import type { Admission } from '../lib/rate/Admission.js';
import type { FaultSpecInput } from '../lib/simulator/faults.js';
import type { Transport } from '../lib/transports/port.js';
import { type TimeByKey, TimedLedger, timedSuppressions, timedTransport } from './timing.js';

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
/** 32 bytes for the raw AES keyring; the happy path never seals, so it never runs here. */
const BENCH_SEAL_KEY = 'sendproof-bench-seal-key-32bytes';
export const BENCH_CONTENT_HASH_KEY = 'sendproof-bench-content-hash-key-0123';

/** The provider simulator in its own process, so the dispatcher process's RSS and CPU are its own. */
export interface SimulatorProcess {
  url: string;
  addFault(spec: FaultSpecInput): Promise<void>;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

export const startSimulatorProcess = async (): Promise<SimulatorProcess> => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'lib/simulator/main.ts', '--port', '0'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('provider simulator did not print its URL in 30 s')),
      30_000,
    );
    child.once('exit', (code) => reject(new Error(`provider simulator exited early (code ${code})`)));
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line.trim());
    });
  }).catch(async (error) => {
    await stopChildProcess(child);
    throw error;
  });
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
    });
    if (!response.ok) throw new Error(`simulator ${method} ${path} answered ${response.status}`);
  };
  return {
    url,
    addFault: (spec) => admin('POST', '/_sim/faults', spec),
    reset: () => admin('DELETE', '/_sim'),
    stop: () => stopChildProcess(child),
  };
};

export interface BenchDynamo {
  local: RunningDynamoDbLocal;
  raw: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  meter: CapacityMeter;
}

/** A FRESH DynamoDB Local (it slows as one instance accumulates tables), with a metered client. */
export const startBenchDynamo = async (): Promise<BenchDynamo> => {
  const local = await startDynamoDbLocal({ logDir: join(REPO_ROOT, '.local', 'logs') });
  const options = { region: 'us-east-1', endpoint: local.endpoint };
  const doc = dynamoDocumentClient(options);
  const meter = new CapacityMeter();
  meter.attach(doc);
  return { local, raw: dynamoClient(options), doc, meter };
};

let tableSeq = 0;
const liveTables = new Set<string>();
export const createTable = async (
  raw: DynamoDBClient,
  input: (name: string) => CreateTableCommandInput,
  prefix: string,
): Promise<string> => {
  tableSeq += 1;
  const name = `bench-${prefix}-${tableSeq}`;
  await raw.send(new CreateTableCommand(input(name)));
  liveTables.add(name);
  return name;
};

/**
 * Drops every table created so far. Called between phases: DynamoDB Local slows as one instance
 * accumulates tables and items, and a phase should not pay for the rows of the one before.
 */
export const dropTables = async (raw: DynamoDBClient): Promise<void> => {
  for (const name of liveTables) {
    await raw.send(new DeleteTableCommand({ TableName: name }));
    liveTables.delete(name);
  }
};

export const createLedgerTables = async (
  raw: DynamoDBClient,
  prefix: string,
  options: { stream?: boolean } = {},
) => ({
  ledgerTable: await createTable(
    raw,
    (name) => {
      const input: CreateTableCommandInput = ledgerCreateTableInput(name);
      // The stream only feeds the archiver; a bulk-loaded read benchmark need not pay for it.
      if (options.stream === false) delete input.StreamSpecification;
      return input;
    },
    prefix,
  ),
  suppressionTable: await createTable(raw, suppressionCreateTableInput, `${prefix}-suppression`),
});

export const suppressionTimeKey = (recipientRef: string, channel: string) => `${recipientRef}:${channel}`;

const quietLogger = {
  info: () => {},
  warn: () => {},
  error: () => {},
};

export interface BenchWiring {
  dispatcher: Dispatcher;
  ledger: Ledger;
  transports: { email: Transport; sms: Transport };
}

/**
 * The production dispatcher with production adapters (harness/dispatcher.ts: the same wiring the
 * integration tests use; RestTransport over HTTP). The only bench-specific parts are the optional timing
 * decorators, a quiet logger and `random: () => 0` (no backoff wait).
 */
export const wireDispatcher = (options: {
  doc: DynamoDBDocumentClient;
  ledgerTable: string;
  suppressionTable: string;
  simulatorUrl: string;
  workerId?: string;
  ledgerTimes?: TimeByKey;
  transportTimes?: TimeByKey;
  /** Keyed by `recipientRef:channel` (the check happens before the row key matters to it). */
  suppressionTimes?: TimeByKey;
  /** Rate control in front of the provider call (bench/pacingWrites.ts measures what it writes). */
  admission?: Admission;
}): BenchWiring => {
  const adapters = localAdapters({ ...options, sealKey: BENCH_SEAL_KEY });
  const ledger = options.ledgerTimes
    ? new TimedLedger(adapters.ledger, options.ledgerTimes)
    : adapters.ledger;
  const rest = restTransports(options.simulatorUrl);
  const transports = options.transportTimes
    ? {
        email: timedTransport(rest.email, options.transportTimes),
        sms: timedTransport(rest.sms, options.transportTimes),
      }
    : rest;
  const dispatcher = new Dispatcher({
    ...adapters,
    ledger,
    suppressions: options.suppressionTimes
      ? timedSuppressions(adapters.suppressions, options.suppressionTimes, suppressionTimeKey)
      : adapters.suppressions,
    transports,
    clock: systemClock,
    contentHashKey: BENCH_CONTENT_HASH_KEY,
    workerId: options.workerId ?? 'dispatch:bench',
    logger: quietLogger,
    random: () => 0,
    ...(options.admission ? { admission: options.admission } : {}),
  });
  return { dispatcher, ledger, transports };
};

/** Synthetic recipients: one per notification, so a simulator fault can target exactly one message. */
export const benchEmail = (n: string) => `bench-${n}@example.com`;

export const resetIntentBody = (eventId: string, email = benchEmail(eventId)): string =>
  JSON.stringify({
    eventId,
    purpose: 'password-reset',
    recipient: { ref: `user-${eventId}`, email },
    channels: ['email'],
    template: { id: 'password-reset', revision: 'v1' },
    data: { appName: 'Quest', resetUrl: 'https://quest.example/reset', expiresInMinutes: 10 },
    secrets: { token: `bench-token-${eventId}` },
    expiresAt: new Date(Date.now() + 10 * 60_000).toISOString(),
    tenant: 'bench',
  } satisfies IntentInput);

/** A small "PDF" on disk, referenced by file:// URI with its real checksum (health reports need one). */
export const benchAttachment = () =>
  pdfOnDisk({
    content: '%PDF-1.4 sendproof benchmark report\n',
    filename: 'report.pdf',
    dirPrefix: 'sendproof-bench-',
  });

export const fallbackIntentBody = (
  eventId: string,
  attachment: ReturnType<typeof benchAttachment>,
  email = benchEmail(eventId),
): string =>
  JSON.stringify({
    eventId,
    purpose: 'health-report',
    recipient: { ref: `patient-${eventId}`, email, phone: '+15555550100' },
    channels: ['email', 'sms'],
    template: { id: 'health-report', revision: 'v1' },
    data: { patientName: 'Bo', reportDate: '2026-11-30', portalUrl: 'https://clinic.example/r/42' },
    attachments: [attachment],
    tenant: 'bench',
  } satisfies IntentInput);

/** A record exactly as a claim writes it (same attributes, same size), to clone for bare writes. */
export const claimShapedRecord = (): DeliveryRecord => {
  const parsed = parseIntent(resetIntentBody('raw-template'), {
    purposes: new PurposeRegistry(),
    clock: systemClock,
  });
  if (!parsed.ok) throw new Error('the benchmark intent does not validate');
  return buildClaimRecord({
    valid: parsed.value,
    channel: 'email',
    contentHash: `h1:${'x'.repeat(43)}`,
    templateOwner: 'application',
    workerId: 'dispatch:bench',
    now: Date.now(),
    leaseMs: 60_000,
  });
};
