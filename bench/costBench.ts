import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { Context, DynamoDBRecord, SQSEvent, SQSRecord } from 'aws-lambda';
import { toLambdaRecord } from '../lib/archive/LocalStreamPoller.js';
import { ENV } from '../lib/config.js';
import type { DeliveryRecord } from '../lib/ledger/port.js';
import { localLambdaContext } from '../lib/local/lambdaContext.js';
import { stopChildProcess } from '../lib/local/processes.js';
import { LOCAL_CONTENT_HASH_KEY } from '../lib/secrets/contentHashKey.js';
import { labelKeyOf, sealLabel } from '../lib/transports/labels.js';
import {
  billedReadUnits,
  chunked,
  logEventBytes,
  type ReadRequestLog,
  recordsPerInvocation,
} from './billing.js';
import type { DynamoTotals } from './capacityProxy.js';
import { REPO_ROOT, resetIntentBody } from './stack.js';

/**
 * The cost phase: the production function entries (functions/dispatch, evidence, outcomes, archive,
 * reconcile), imported with their configuration from the environment as Lambda loads them, driven with
 * the events Lambda would hand them on the happy path, each invocation timed (wall and CPU) and its log
 * output captured. DynamoDB is reached through metering proxies in another process (bench/meterProcess.ts,
 * so their CPU is not counted as the functions'), EventBridge PutEvents and S3 PutObject through a
 * counting fake in that process; DynamoDB Local and the provider simulator run in their own processes.
 *
 * The functions read their configuration on import: one cost phase per process (bench/costRun.ts).
 */

export const COST_FUNCTIONS = ['dispatch', 'evidence', 'outcomes', 'archive', 'reconcile'] as const;
export type CostFunction = (typeof COST_FUNCTIONS)[number];

export interface InvocationSample {
  records: number;
  wallMs: number;
  cpuMs: number;
}

export interface FunctionMeasurement {
  memoryMb: number;
  invocations: number;
  records: number;
  samples: InvocationSample[];
  /** Lines the function wrote to stdout/stderr (Powertools Logger and EMF), and their billed bytes. */
  logLines: number;
  logBytes: number;
  /** Of those, EMF metric documents. */
  emfLines: number;
  emfBytes: number;
  logLinesByLevel: Record<string, number>;
  /** The distinct messages of its INFO lines (what a happy path says), for the docs. */
  infoMessages: string[];
  /** A few of its lines that are not JSON (written around Powertools, e.g. by a library). */
  unstructured: string[];
  dynamo: {
    writeUnits: number;
    writeRequests: number;
    readRequests: number;
    readUnitsReported: number;
    readUnitsBilled: number;
  };
}

export interface CostMeasurement {
  measuredAt: string;
  notifications: number;
  /** Invocation batch sizes the phase used (the deployment's, at `notificationsPerMonth`). */
  batches: Record<CostFunction, number>;
  functions: Record<CostFunction, FunctionMeasurement>;
  /** Bytes of each intake message body and each evidence queue message (the SES event EventBridge sends). */
  sqs: { intakeBodyBytes: number[]; evidenceBodyBytes: number[] };
  evidenceEvents: number;
  streamRecords: number;
  eventBridge: { putEventsCalls: number; eventBytes: number[] };
  s3: { puts: number };
  reconcileRuns: number;
  /** Distinct CloudWatch metrics (namespace, name, dimension values) the EMF documents define. */
  metricSeries: string[];
  /** The log level the functions ran at (POWERTOOLS_LOG_LEVEL; unset: Powertools' default, INFO). */
  logLevel: string;
}

export interface CostBenchOptions {
  dynamoEndpoint: string;
  raw: DynamoDBClient;
  tables: { ledgerTable: string; suppressionTable: string };
  simulatorUrl: string;
  notifications: number;
  memoryMb: Record<CostFunction, number>;
  /** The event sources' batching, and the volume a month (it sets the windowed batches). */
  sources: {
    dispatchBatchSize: number;
    evidence: { batchSize: number; maxBatchingWindowSeconds: number };
    outcomes: { batchSize: number; maxBatchingWindowSeconds: number };
    archive: { batchSize: number; maxBatchingWindowSeconds: number };
    notificationsPerMonth: number;
  };
  recordConcurrency: number;
  progress: (line: string) => void;
}

const LABEL_KEY = labelKeyOf(LOCAL_CONTENT_HASH_KEY);

/** The documented SES event payloads (awsdocs examples, test/contract/providers/ses; source named in each file). */
const sesPayload = (name: 'event-send' | 'event-delivery'): Record<string, unknown> =>
  JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'contract', 'providers', 'ses', `${name}.json`), 'utf8'))
    .payload as Record<string, unknown>;

/** What EventBridge puts on the evidence queue for one SES event of a message we sent (lib/evidence/events.ts). */
const sesQueueBody = (row: DeliveryRecord, type: 'Send' | 'Delivery', seq: number): string => {
  const payload = structuredClone(sesPayload(type === 'Send' ? 'event-send' : 'event-delivery'));
  const mail = payload.mail as Record<string, unknown>;
  mail.messageId = row.providerMessageId;
  mail.tags = { ...(mail.tags as Record<string, unknown>), 'sendproof-key': [sealLabel(LABEL_KEY, row.pk)] };
  return JSON.stringify({
    version: '0',
    id: `cost-eb-${seq}`,
    'detail-type': type === 'Send' ? 'Email Sent' : 'Email Delivered',
    source: 'aws.ses',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [],
    detail: payload,
  });
};

const sqsRecord = (body: string, id: string, queue: string): SQSRecord => ({
  messageId: id,
  receiptHandle: `rh-${id}`,
  body,
  attributes: {
    ApproximateReceiveCount: '1',
    SentTimestamp: String(Date.now()),
    SenderId: 'bench',
    ApproximateFirstReceiveTimestamp: String(Date.now()),
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${queue}`,
  awsRegion: 'us-east-1',
});

interface MeterProcess {
  child: ChildProcess;
  control: string;
  sink: string;
  meters: Record<string, string>;
}

const startMeterProcess = async (upstream: string, names: readonly string[]): Promise<MeterProcess> => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/meterProcess.ts', upstream, ...names], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('meter process did not start in 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`meter process exited early (code ${code})`)));
    createInterface({ input: child.stdout! }).once('line', (l) => {
      clearTimeout(timer);
      resolve(l);
    });
  });
  return { child, ...(JSON.parse(line) as Omit<MeterProcess, 'child'>) };
};

/** Captures what the functions write (Powertools writes through process.stdout / stderr). */
class LogCapture {
  private lines: string[] = [];
  private partial = '';
  private readonly originals = { out: process.stdout.write, err: process.stderr.write };

  start(): void {
    this.lines = [];
    this.partial = '';
    const capture = (chunk: unknown): boolean => {
      const text =
        this.partial + (typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString());
      const parts = text.split('\n');
      this.partial = parts.pop() ?? '';
      this.lines.push(...parts.filter((l) => l.length > 0));
      return true;
    };
    process.stdout.write = capture as typeof process.stdout.write;
    process.stderr.write = capture as typeof process.stderr.write;
  }

  stop(): string[] {
    process.stdout.write = this.originals.out;
    process.stderr.write = this.originals.err;
    if (this.partial) this.lines.push(this.partial);
    return this.lines;
  }
}

/** A log line as the results may keep it: 200 characters, email addresses and long digit runs masked. */
export const maskedLine = (line: string): string =>
  line
    .slice(0, 200)
    .replace(/[^\s@"'<>]+@[^\s@"'<>]+/g, '<address>')
    .replace(/\+?\d[\d ]{6,}\d/g, '<number>');

/** A function's measurement before its first invocation (also the tests' starting point). */
export const emptyFunction = (memoryMb: number): FunctionMeasurement => ({
  memoryMb,
  invocations: 0,
  records: 0,
  samples: [],
  logLines: 0,
  logBytes: 0,
  emfLines: 0,
  emfBytes: 0,
  logLinesByLevel: {},
  infoMessages: [],
  unstructured: [],
  dynamo: { writeUnits: 0, writeRequests: 0, readRequests: 0, readUnitsReported: 0, readUnitsBilled: 0 },
});

const dynamoOf = (totals: DynamoTotals) => {
  const uses = [...Object.values(totals.byResource), ...Object.values(totals.batchGets)];
  const reads: ReadRequestLog[] = totals.readLog ?? [];
  return {
    writeUnits: uses.reduce((s, u) => s + u.writeUnits, 0),
    writeRequests: uses.reduce((s, u) => s + u.writeRequests, 0),
    readRequests: reads.length,
    readUnitsReported: reads.reduce((s, r) => s + r.reportedUnits, 0),
    readUnitsBilled: reads.reduce((s, r) => s + billedReadUnits(r), 0),
  };
};

export const measureCostPhase = async (options: CostBenchOptions): Promise<CostMeasurement> => {
  const { progress, tables } = options;
  const meter = await startMeterProcess(options.dynamoEndpoint, ['dispatch', 'evidence', 'reconcile']);
  try {
    const region = 'us-east-1';
    Object.assign(process.env, {
      [ENV.region]: region,
      [ENV.ledgerTable]: tables.ledgerTable,
      [ENV.suppressionTable]: tables.suppressionTable,
      [ENV.emailTransport]: 'simulator',
      [ENV.smsTransport]: 'simulator',
      [ENV.restBaseUrl]: options.simulatorUrl,
      [ENV.recordConcurrency]: String(options.recordConcurrency),
      [ENV.eventBusName]: 'sendproof-cost',
      [ENV.endpointEventBridge]: meter.sink,
      [ENV.endpointS3]: meter.sink,
      [ENV.archiveBucket]: 'sendproof-cost-archive',
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    // As deployed: Powertools' default level (the CDK sets none), metrics on.
    delete process.env.POWERTOOLS_METRICS_DISABLED;
    const logLevel = process.env.POWERTOOLS_LOG_LEVEL ?? 'INFO (Powertools default)';
    const importWith = async <T>(dynamoEndpoint: string | undefined, load: () => Promise<T>): Promise<T> => {
      if (dynamoEndpoint) process.env[ENV.endpointDynamoDb] = dynamoEndpoint;
      return load();
    };
    const dispatchEntry = await importWith(
      meter.meters.dispatch,
      () => import('../functions/dispatch/index.js'),
    );
    const evidenceEntry = await importWith(
      meter.meters.evidence,
      () => import('../functions/evidence/index.js'),
    );
    // The sweep re-publishes parked intents to the intake queue; the happy path parks none, so no request
    // reaches this address (a request would fail the run).
    process.env[ENV.queueUrl] = 'http://127.0.0.1:9/000000000000/sendproof-cost-intake';
    const reconcileEntry = await importWith(
      meter.meters.reconcile,
      () => import('../functions/reconcile/index.js'),
    );
    const outcomesEntry = await import('../functions/outcomes/index.js');
    const archiveEntry = await import('../functions/archive/index.js');

    const fns = Object.fromEntries(
      COST_FUNCTIONS.map((f) => [f, emptyFunction(options.memoryMb[f])]),
    ) as Record<CostFunction, FunctionMeasurement>;
    const capture = new LogCapture();
    const metricSeries = new Set<string>();
    let measuring = false;
    /** One invocation, timed and its logs captured; counted only while measuring (not the warm-up). */
    const invoke = async <T>(fn: CostFunction, records: number, call: () => Promise<T>): Promise<T> => {
      capture.start();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      let value: T;
      try {
        value = await call();
      } finally {
        const wallMs = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        const lines = capture.stop();
        if (measuring) {
          const m = fns[fn];
          m.invocations += 1;
          m.records += records;
          m.samples.push({ records, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 });
          for (const line of lines) {
            m.logLines += 1;
            m.logBytes += logEventBytes(line);
            let parsed: Record<string, unknown> | undefined;
            try {
              parsed = JSON.parse(line) as Record<string, unknown>;
            } catch {
              parsed = undefined;
            }
            const aws = parsed?._aws as
              | {
                  CloudWatchMetrics?: Array<{
                    Namespace: string;
                    Dimensions: string[][];
                    Metrics: Array<{ Name: string }>;
                  }>;
                }
              | undefined;
            if (aws?.CloudWatchMetrics) {
              m.emfLines += 1;
              m.emfBytes += logEventBytes(line);
              for (const directive of aws.CloudWatchMetrics)
                for (const dims of directive.Dimensions)
                  for (const metric of directive.Metrics)
                    metricSeries.add(
                      `${directive.Namespace}|${metric.Name}|${dims.map((d) => `${d}=${String(parsed?.[d])}`).join(',')}`,
                    );
              continue;
            }
            const level = String(parsed?.level ?? 'unstructured');
            // Kept in the committed results (bench/results/cost.json): never an address or a number as logged.
            if (!parsed && m.unstructured.length < 3) m.unstructured.push(maskedLine(line));
            m.logLinesByLevel[level] = (m.logLinesByLevel[level] ?? 0) + 1;
            const message = String(parsed?.message ?? line.slice(0, 80));
            if (level === 'INFO' && !m.infoMessages.includes(message)) m.infoMessages.push(message);
          }
        }
      }
      return value;
    };
    const context = (name: string): Context => localLambdaContext(`sendproof-${name}-cost`, region);

    // ── dispatch: SQS batches of the intake queue's size through the real entry ──────────────────────
    const batch = options.sources.dispatchBatchSize;
    const intakeBodyBytes: number[] = [];
    const dispatchBatch = async (prefix: string, b: number, count: boolean) => {
      const bodies = Array.from({ length: batch }, (_, i) => resetIntentBody(`${prefix}-${b}-${i}`));
      if (count) intakeBodyBytes.push(...bodies.map((x) => Buffer.byteLength(x)));
      const event: SQSEvent = {
        Records: bodies.map((body, i) => sqsRecord(body, `${prefix}-${b}-${i}`, 'intake')),
      };
      const out = await invoke('dispatch', batch, async () =>
        dispatchEntry.handler(event, context('dispatch'), () => undefined),
      );
      if (out?.batchItemFailures.length)
        throw new Error(`cost phase: dispatch batch ${prefix}-${b} had failures`);
    };
    // Warm-up: a warm execution environment is the steady state (cold starts are their own figure).
    await dispatchBatch('cost-warm', 0, false);
    await invoke('reconcile', 1, () => reconcileEntry.handler({}, context('reconcile')));
    const resetMeters = () =>
      Promise.all(
        ['dispatch', 'evidence', 'reconcile'].map((n) =>
          fetch(`${meter.control}/${n}/reset`, { method: 'POST' }),
        ),
      );
    await resetMeters();
    measuring = true;
    // ── the reconcile schedule's fixed work: runs with nothing waiting (before the measured traffic, so
    // its pull feed holds no events of it: with SES, evidence never arrives through the feed) ──────────
    const reconcileRuns = 3;
    for (let r = 0; r < reconcileRuns; r++) {
      let cursor: string | undefined;
      for (let page = 0; page < 50; page++) {
        const result = await invoke('reconcile', 1, () =>
          reconcileEntry.handler(cursor ? { cursor } : {}, context('reconcile')),
        );
        if (!result.hasMore || !result.cursor) break;
        cursor = result.cursor;
      }
    }
    const batches = Math.ceil(options.notifications / batch);
    for (let b = 0; b < batches; b++) await dispatchBatch('cost', b, true);
    const notifications = batches * batch;
    progress(`cost phase: ${notifications} notifications dispatched in ${batches} invocations`);

    // ── evidence: the configuration set's Send and Delivery per message, in windowed batches ──────────
    const { DynamoLedger } = await import('../lib/ledger/DynamoLedger.js');
    const { dynamoDocumentClient } = await import('../lib/aws/clients.js');
    const ledger = new DynamoLedger(
      dynamoDocumentClient({ region, endpoint: options.dynamoEndpoint }),
      tables.ledgerTable,
    );
    const rows: DeliveryRecord[] = [];
    for (let b = 0; b < batches; b++)
      for (let i = 0; i < batch; i++) {
        const row = await ledger.get(`bench:password-reset:cost-${b}-${i}:user-cost-${b}-${i}:email`);
        if (row?.state !== 'accepted')
          throw new Error(`cost phase: row cost-${b}-${i} is ${row?.state ?? 'missing'}`);
        rows.push(row);
      }
    const perMonth = options.sources.notificationsPerMonth;
    const perSecond = perMonth / (30 * 86_400);
    const evidenceBatch = Math.round(recordsPerInvocation(perSecond * 2, options.sources.evidence));
    // Sends first, then Deliveries: SES publishes a message's Delivery seconds after its Send.
    let seq = 0;
    const evidenceBodies = [
      ...rows.map((row) => sesQueueBody(row, 'Send', ++seq)),
      ...rows.map((row) => sesQueueBody(row, 'Delivery', ++seq)),
    ];
    for (const [k, group] of chunked(evidenceBodies, evidenceBatch).entries()) {
      const event: SQSEvent = {
        Records: group.map((body, i) => sqsRecord(body, `ev-${k}-${i}`, 'evidence')),
      };
      const out = (await invoke('evidence', group.length, async () =>
        evidenceEntry.handler(event, context('evidence')),
      )) as { batchItemFailures?: unknown[] };
      if (out.batchItemFailures?.length) throw new Error(`cost phase: evidence batch ${k} had failures`);
    }
    const settled = await Promise.all(rows.map((r) => ledger.get(r.pk)));
    const delivered = settled.filter((r) => r?.delivery?.status === 'delivered').length;
    if (delivered !== rows.length)
      throw new Error(`cost phase: ${delivered} of ${rows.length} rows recorded their delivery`);
    progress(`cost phase: ${evidenceBodies.length} SES events recorded in batches of ${evidenceBatch}`);

    // ── the ledger stream's two readers: outcome events (1 s window) and the archive (60 s) ──────────
    const streamRecords = (await readStream(options.raw, options.dynamoEndpoint, tables.ledgerTable)).filter(
      (r) => !JSON.stringify(r.dynamodb?.Keys ?? {}).includes('cost-warm'),
    );
    const recordsPerNotification = streamRecords.length / notifications;
    const outcomesBatch = Math.round(
      recordsPerInvocation(perSecond * recordsPerNotification, options.sources.outcomes),
    );
    const archiveBatch = Math.round(
      recordsPerInvocation(perSecond * recordsPerNotification, options.sources.archive),
    );
    for (const group of chunked(streamRecords, outcomesBatch)) {
      const out = await invoke('outcomes', group.length, () =>
        outcomesEntry.handler({ Records: group }, context('outcomes')),
      );
      if (out.batchItemFailures.length) throw new Error('cost phase: outcome events batch had failures');
    }
    for (const group of chunked(streamRecords, archiveBatch)) {
      const out = await invoke('archive', group.length, () =>
        archiveEntry.handler({ Records: group }, context('archive')),
      );
      if (out.batchItemFailures.length) throw new Error('cost phase: archive batch had failures');
    }
    progress(
      `cost phase: ${streamRecords.length} stream records to outcome events (batches of ${outcomesBatch}) and the archive (${archiveBatch})`,
    );

    measuring = false;

    for (const name of ['dispatch', 'evidence', 'reconcile'] as const) {
      const totals = (await (await fetch(`${meter.control}/${name}`)).json()) as DynamoTotals;
      fns[name].dynamo = dynamoOf(totals);
    }
    const sink = (await (await fetch(`${meter.control}/sink`)).json()) as {
      putEventsCalls: number;
      eventBytes: number[];
      s3Puts: number;
    };
    return {
      measuredAt: new Date().toISOString(),
      notifications,
      batches: {
        dispatch: batch,
        evidence: evidenceBatch,
        outcomes: outcomesBatch,
        archive: archiveBatch,
        reconcile: 1,
      },
      functions: fns,
      sqs: { intakeBodyBytes, evidenceBodyBytes: evidenceBodies.map((b) => Buffer.byteLength(b)) },
      evidenceEvents: evidenceBodies.length,
      streamRecords: streamRecords.length,
      eventBridge: { putEventsCalls: sink.putEventsCalls, eventBytes: sink.eventBytes },
      s3: { puts: sink.s3Puts },
      reconcileRuns,
      metricSeries: [...metricSeries].sort(),
      logLevel,
    };
  } finally {
    await stopChildProcess(meter.child);
  }
};

/** Every record the table's stream holds, as Lambda hands them over (lib/archive/LocalStreamPoller.ts). */
const readStream = async (
  raw: DynamoDBClient,
  endpoint: string,
  table: string,
): Promise<DynamoDBRecord[]> => {
  const streamArn = (await raw.send(new DescribeTableCommand({ TableName: table }))).Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`cost phase: table ${table} has no stream`);
  const streams = new DynamoDBStreamsClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const shards =
    (await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }))).StreamDescription?.Shards ?? [];
  const records: DynamoDBRecord[] = [];
  for (const shard of shards) {
    let iterator = (
      await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: shard.ShardId!,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      )
    ).ShardIterator;
    for (let i = 0; iterator && i < 100; i++) {
      const out = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      records.push(...(out.Records ?? []).map((r) => toLambdaRecord(r, streamArn, 'us-east-1')));
      if (!out.Records?.length) break;
      iterator = out.NextShardIterator;
    }
  }
  return records;
};
