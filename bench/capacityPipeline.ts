import { performance } from 'node:perf_hooks';
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSEvent } from 'aws-lambda';
import { dynamoClient, dynamoDocumentClient, sqsClient } from '../lib/aws/clients.js';
import { ENV } from '../lib/config.js';
import { systemClock } from '../lib/domain/clock.js';
import { parseIntent } from '../lib/domain/intent.js';
import { deriveDedupeKey, identityOf } from '../lib/domain/keys.js';
import { PurposeRegistry } from '../lib/domain/purposes.js';
import { isTerminal } from '../lib/domain/states.js';
import { DynamoLedger } from '../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../lib/ledger/port.js';
import { ledgerCreateTableInput, suppressionCreateTableInput } from '../lib/ledger/tableDefinition.js';
import { type RunningDynamoDbLocal, startDynamoDbLocal } from '../lib/local/DynamoDbLocal.js';
import { localLambdaContext } from '../lib/local/lambdaContext.js';
import { cleanupStack } from '../lib/local/processes.js';
import { createIntakeQueue, queueDepth, startFauxqs } from '../lib/local/queues.js';
import { SqsPoller } from '../lib/local/SqsPoller.js';
import { INTAKE_QUEUE } from '../lib/queueDefinition.js';
import { type RunningProviderSimulator, startProviderSimulator } from '../lib/simulator/ProviderSimulator.js';
import {
  type DynamoTotals,
  type SqsTotals,
  startDynamoMeter,
  startSqsMeter,
  type UseByResource,
} from './capacityProxy.js';

/**
 * The real pipeline on the local stack, metered, for the capacity model: the production function entries
 * (functions/dispatch and functions/reconcile, imported with their configuration from the environment
 * as Lambda loads them) over DynamoDB Local, fauxqs (SQS) and the provider simulator (a test double; the
 * REST convention for email and SMS, its events read by the reconcile run's pull feed). The SQS event
 * source is lib/local/SqsPoller; the reconcile schedule is driven here, page by page as the Step
 * Functions loop does.
 *
 * Each function reaches DynamoDB through its own metering proxy (bench/capacityProxy.ts), so every
 * unit is attributed to the function that spent it, per table and per index. One pipeline per process:
 * the entries read their configuration when imported.
 */

/** Tables renamed to their role in the model. */
export const RESOURCES = {
  ledger: 'ledger',
  attention: 'ledger/attention',
  suppression: 'suppression',
} as const;

export interface PipelineOptions {
  /** An existing DynamoDB Local (the benchmark's); otherwise one is started and stopped here. */
  dynamoEndpoint?: string;
  /** SQS receive loops, like the event source mapping's concurrent batches. */
  pollers?: number;
  leaseSeconds?: number;
  parkGraceSeconds?: number;
  recordConcurrency?: number;
  attentionShards?: number;
  /** Purpose policies over the built-ins (SENDPROOF_PURPOSES). */
  purposes?: unknown[];
  progress?: (line: string) => void;
}

export interface FunctionCounts {
  dispatchInvocations: number;
  dispatchRecords: number;
  dispatchMs: number;
  reconcileRuns: number;
  reconcileInvocations: number;
  reconcileMs: number;
  /** Rows the reconcile pages processed. */
  reconcileRows: number;
}

export interface PipelineSnapshot {
  dispatch: DynamoTotals;
  reconcile: DynamoTotals;
  sqs: SqsTotals;
  functions: FunctionCounts;
  /** Intents this harness published (SendMessageBatch, unmetered). */
  published: number;
  /** Provider requests (sends, replays, lookups) and feed events since the last reset. */
  provider: { requests: number; sends: number; events: number };
}

export interface Pipeline {
  simulator: RunningProviderSimulator;
  ledger: DynamoLedger;
  purposes: PurposeRegistry;
  /** The dedupe keys an intent body claims (one per channel). */
  keysOf(body: string): string[];
  /**
   * Publishes `bodies` at `perSecond` (all at once when undefined), `batch` per SendMessageBatch (as
   * lib/publish does, 10 by default), the batches evenly spaced.
   */
  publish(bodies: readonly string[], perSecond?: number, batch?: number): Promise<void>;
  /** One reconcile run: pages until the handler says no more remain (at most 50, as the workflow). */
  reconcileRun(): Promise<void>;
  /** Runs the reconcile schedule every `periodMs` until the returned stop is awaited. */
  schedule(periodMs: number): () => Promise<void>;
  /**
   * Runs the reconcile schedule's sweep until the ledger holds no seal: each seal a dispatcher wrote
   * (lib/dispatch/parking.ts) is released by the sweep once it is due and its rows are final
   * (lib/reconcile/Sweeper.ts `sweepSeal` → `release`), a parking grace after the row settled. Without
   * this a run's count stops before that DeleteItem (table and attention index units), and the seals a
   * run leaves are released, and counted, inside the next one. Returns the seals still there at the timeout.
   */
  drainSeals(timeoutMs: number): Promise<number>;
  /** Waits until every key's row is final and the intake queue holds nothing. */
  settle(keys: readonly string[], timeoutMs: number): Promise<DeliveryRecord[]>;
  snapshot(): PipelineSnapshot;
  reset(): void;
  stop(): Promise<void>;
}

/**
 * Reconcile runs, each just past the earliest seal's due time (at least half a second apart: a seal the
 * sweep re-armed waits again), until no seal is left or `timeoutMs` has passed; returns the seals left.
 */
export const drainSealsWith = async (
  io: {
    seals: () => Promise<ReadonlyArray<{ dueAt: number }>>;
    run: () => Promise<void>;
    sleep: (ms: number) => Promise<unknown>;
    now: () => number;
  },
  timeoutMs: number,
): Promise<number> => {
  const deadline = io.now() + timeoutMs;
  for (;;) {
    const seals = await io.seals();
    const next = seals[0];
    if (!next) return 0;
    if (io.now() >= deadline) return seals.length;
    const wait = Math.max(500, next.dueAt - io.now() + 100);
    await io.sleep(Math.min(wait, Math.max(0, deadline - io.now())));
    await io.run();
  }
};

let started = false;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Table names → roles (`ledger`, `ledger/attention`, `suppression`). */
export const byRole = (use: UseByResource, tables: { ledger: string; suppression: string }): UseByResource =>
  Object.fromEntries(
    Object.entries(use).map(([resource, u]) => [
      resource
        .replace(tables.ledger, RESOURCES.ledger)
        .replace(tables.suppression, RESOURCES.suppression)
        .replace(/^ledger\/.*$/, RESOURCES.attention),
      u,
    ]),
  );

const roleTotals = (t: DynamoTotals, tables: { ledger: string; suppression: string }): DynamoTotals => ({
  ...t,
  byResource: byRole(t.byResource, tables),
  batchGets: byRole(t.batchGets, tables),
  holdReads: t.holdReads.map((r) => ({
    ...r,
    table: r.table === tables.ledger ? RESOURCES.ledger : r.table,
  })),
});

export const startPipeline = async (options: PipelineOptions = {}): Promise<Pipeline> => {
  if (started)
    throw new Error(
      'one capacity pipeline per process: the function entries read their configuration on import',
    );
  started = true;
  const progress = options.progress ?? (() => undefined);
  const region = 'us-east-1';
  const cleanups = cleanupStack();
  const { stopAll } = cleanups;
  try {
    let dynamoEndpoint = options.dynamoEndpoint;
    if (!dynamoEndpoint) {
      progress('capacity pipeline: starting DynamoDB Local');
      const local: RunningDynamoDbLocal = await startDynamoDbLocal();
      cleanups.push(() => local.stop());
      dynamoEndpoint = local.endpoint;
    }
    const fauxqs = await startFauxqs();
    cleanups.push(fauxqs.stop);
    const sqsEndpoint = fauxqs.endpoint;
    const simulator = await startProviderSimulator({ host: '127.0.0.1' });
    cleanups.push(() => simulator.stop());
    const dispatchMeter = await startDynamoMeter(dynamoEndpoint);
    const reconcileMeter = await startDynamoMeter(dynamoEndpoint);
    const sqsMeter = await startSqsMeter(sqsEndpoint);
    cleanups.push(dispatchMeter.stop, reconcileMeter.stop, sqsMeter.stop);

    // Tables and queues, from the same definitions the CDK app uses (not metered).
    const raw: DynamoDBClient = dynamoClient({ region, endpoint: dynamoEndpoint });
    const suffix = `${Date.now().toString(36)}-${process.pid}`;
    const tables = { ledger: `capacity-ledger-${suffix}`, suppression: `capacity-suppression-${suffix}` };
    await raw.send(new CreateTableCommand(ledgerCreateTableInput(tables.ledger)));
    await raw.send(new CreateTableCommand(suppressionCreateTableInput(tables.suppression)));
    const direct: SQSClient = sqsClient({ region, endpoint: sqsEndpoint });
    // A lease well beyond a loaded machine's slowest dispatch: no redelivery finds a live row by accident.
    const leaseSeconds = options.leaseSeconds ?? 30;
    const { queueUrl, dlqUrl } = await createIntakeQueue(direct, {
      name: `capacity-intake-${suffix}`,
      dlqName: `capacity-dlq-${suffix}`,
      visibilityTimeoutSeconds: leaseSeconds + 3,
    });

    // The functions' configuration, as the CDK app sets it (lib/config.ts), pointed at the proxies.
    const common: Record<string, string> = {
      [ENV.region]: region,
      [ENV.ledgerTable]: tables.ledger,
      [ENV.suppressionTable]: tables.suppression,
      [ENV.queueUrl]: queueUrl,
      [ENV.dlqUrl]: dlqUrl,
      [ENV.emailTransport]: 'simulator',
      [ENV.smsTransport]: 'simulator',
      [ENV.restBaseUrl]: simulator.url,
      [ENV.leaseSeconds]: String(leaseSeconds),
      [ENV.parkGraceSeconds]: String(options.parkGraceSeconds ?? leaseSeconds + 3),
      [ENV.maxReceiveCount]: String(INTAKE_QUEUE.maxReceiveCount),
      [ENV.recordConcurrency]: String(options.recordConcurrency ?? 5),
      [ENV.attentionShards]: String(options.attentionShards ?? 4),
      [ENV.endpointSqs]: sqsMeter.endpoint,
      [ENV.endpointS3]: sqsEndpoint,
      ...(options.purposes ? { [ENV.purposes]: JSON.stringify(options.purposes) } : {}),
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      AWS_EC2_METADATA_DISABLED: 'true',
    };
    Object.assign(process.env, common, { [ENV.endpointDynamoDb]: dispatchMeter.endpoint });
    const dispatchEntry = await import('../functions/dispatch/index.js');
    Object.assign(process.env, { [ENV.endpointDynamoDb]: reconcileMeter.endpoint });
    const reconcileEntry = await import('../functions/reconcile/index.js');

    const counts: FunctionCounts = {
      dispatchInvocations: 0,
      dispatchRecords: 0,
      dispatchMs: 0,
      reconcileRuns: 0,
      reconcileInvocations: 0,
      reconcileMs: 0,
      reconcileRows: 0,
    };
    let published = 0;
    // The simulator is never reset (the pull feed's cursor lives in the ledger): counts are offsets.
    let requestsAt = 0;
    let eventsAt = 0;
    const poller = new SqsPoller({
      sqs: sqsClient({ region, endpoint: sqsMeter.endpoint }),
      queueUrl,
      region,
      functionName: 'sendproof-dispatch-capacity',
      pollers: options.pollers ?? 2,
      handler: async (event: SQSEvent, context: Context) => {
        counts.dispatchInvocations += 1;
        counts.dispatchRecords += event.Records.length;
        const t0 = performance.now();
        try {
          return (await dispatchEntry.handler(event, context, () => undefined)) ?? undefined;
        } finally {
          counts.dispatchMs += performance.now() - t0;
        }
      },
      onError: (error) => progress(`capacity pipeline: dispatch poller error: ${String(error)}`),
    });
    await poller.start();
    cleanups.push(() => poller.stop());

    let reconciling: Promise<void> = Promise.resolve();
    const runOnce = async () => {
      counts.reconcileRuns += 1;
      let cursor: string | undefined;
      for (let page = 0; page < 50; page++) {
        counts.reconcileInvocations += 1;
        const t0 = performance.now();
        const result = await reconcileEntry
          .handler(cursor ? { cursor } : {}, localLambdaContext('sendproof-reconcile-capacity', region))
          .finally(() => {
            counts.reconcileMs += performance.now() - t0;
          });
        counts.reconcileRows += result.processed;
        if (!result.hasMore || !result.cursor) return;
        cursor = result.cursor;
      }
    };
    const reconcileRun = () => {
      reconciling = reconciling.then(runOnce);
      return reconciling;
    };

    const doc: DynamoDBDocumentClient = dynamoDocumentClient({ region, endpoint: dynamoEndpoint });
    const ledger = new DynamoLedger(doc, tables.ledger, { attentionShards: options.attentionShards ?? 4 });
    const purposes = PurposeRegistry.withOverrides(options.purposes ?? []);
    const keysOf = (body: string): string[] => {
      const parsed = parseIntent(body, { purposes, clock: systemClock, allowExpired: true });
      if (!parsed.ok)
        throw new Error(`capacity pipeline: an intent does not validate: ${parsed.error.message}`);
      const { intent, policy } = parsed.value;
      return intent.channels.map((c) => deriveDedupeKey(identityOf(intent, policy, c)).readable);
    };

    /** Messages still on the intake queue, visible or in flight. */
    const queued = () => queueDepth(direct, queueUrl);

    return {
      simulator,
      ledger,
      purposes,
      keysOf,
      publish: async (bodies, perSecond, batch = 10) => {
        const t0 = performance.now();
        for (let i = 0; i < bodies.length; i += batch) {
          if (perSecond) {
            const due = t0 + (i * 1000) / perSecond - performance.now();
            if (due > 0) await sleep(due);
          }
          const group = bodies.slice(i, i + batch);
          const out = await direct.send(
            new SendMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: group.map((body, k) => ({ Id: String(k), MessageBody: body })),
            }),
          );
          if (out.Failed?.length)
            throw new Error(`capacity pipeline: ${out.Failed.length} intents not published`);
          published += group.length;
        }
      },
      reconcileRun,
      schedule: (periodMs) => {
        const timer = setInterval(() => {
          void reconcileRun().catch((error) =>
            progress(`capacity pipeline: reconcile run failed: ${String(error)}`),
          );
        }, periodMs);
        return async () => {
          clearInterval(timer);
          await reconciling;
        };
      },
      drainSeals: (timeoutMs) =>
        drainSealsWith(
          {
            // Every seal, due or not (unmetered: the harness's own read), earliest due first.
            seals: async () => (await ledger.listDue(Number.MAX_SAFE_INTEGER, { limit: 100 })).items,
            run: reconcileRun,
            sleep,
            now: Date.now,
          },
          timeoutMs,
        ),
      settle: async (keys, timeoutMs) => {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const rows = await Promise.all(keys.map((k) => ledger.get(k)));
          const open = rows.filter((r) => !r || !isTerminal(r.state));
          const onQueue = open.length === 0 ? await queued() : undefined;
          if (onQueue === 0) return rows as DeliveryRecord[];
          if (Date.now() > deadline)
            throw new Error(
              `capacity pipeline: not settled after ${timeoutMs} ms: ${open.length} of ${keys.length} rows not final${
                open.length
                  ? ` (${open
                      .slice(0, 3)
                      .map((r) => r?.state ?? 'missing')
                      .join(', ')})`
                  : `, ${onQueue} message(s) still on the intake queue`
              }`,
            );
          await sleep(250);
        }
      },
      snapshot: () => ({
        dispatch: roleTotals(dispatchMeter.totals(), tables),
        reconcile: roleTotals(reconcileMeter.totals(), tables),
        sqs: sqsMeter.totals(),
        functions: { ...counts },
        published,
        provider: (() => {
          const requests = simulator.requests().slice(requestsAt);
          return {
            requests: requests.length,
            sends: requests.filter((r) => r.outcome === 'accepted').length,
            events: simulator.events().length - eventsAt,
          };
        })(),
      }),
      reset: () => {
        dispatchMeter.reset();
        reconcileMeter.reset();
        sqsMeter.reset();
        for (const key of Object.keys(counts) as Array<keyof FunctionCounts>) counts[key] = 0;
        published = 0;
        requestsAt = simulator.requests().length;
        eventsAt = simulator.events().length;
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
};
