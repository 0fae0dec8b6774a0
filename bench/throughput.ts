import { performance } from 'node:perf_hooks';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { LEDGER_TABLE, ledgerCreateTableInput } from '../lib/ledger/tableDefinition.js';
import { INTAKE_QUEUE } from '../lib/queueDefinition.js';
import { powertoolsPeer } from './powertoolsPeer.js';
import type { LatencyResult, ThroughputResult, ThroughputRound } from './results.js';
import {
  type BenchDynamo,
  claimShapedRecord,
  createLedgerTables,
  createTable,
  resetIntentBody,
  type SimulatorProcess,
  suppressionTimeKey,
  wireDispatcher,
} from './stack.js';
import { median, ratePerSecond, ratio, summarize } from './stats.js';
import { TimeByKey } from './timing.js';

/** Runs `count` jobs with at most `concurrency` in flight; resolves with the elapsed milliseconds. */
export const runPool = async (
  count: number,
  concurrency: number,
  job: (index: number) => Promise<void>,
): Promise<number> => {
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < count) {
      const index = next++;
      await job(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return performance.now() - start;
};

/** Samples this process's RSS while `work` runs. The dispatcher runs in this process; the servers do not. */
const withPeakRss = async <T>(work: () => Promise<T>): Promise<{ value: T; peakRss: number }> => {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 20);
  try {
    const value = await work();
    return { value, peakRss: Math.max(peak, process.memoryUsage.rss()) };
  } finally {
    clearInterval(timer);
  }
};

const MB = 1024 * 1024;

const cpuMs = (usage: NodeJS.CpuUsage): number => (usage.user + usage.system) / 1000;

export interface ThroughputOptions {
  rounds: number;
  rawWrites: number;
  notifications: number;
  concurrency: number;
  writesPerNotification: number;
  warmup: number;
}

/**
 * Alternating rounds in one run: bare conditional puts (the ceiling), then notifications through the
 * real dispatcher, at the same concurrency. Each round yields a ratio; the median is the verdict, so one
 * noisy neighbour burst does not decide it.
 */
export const measureThroughput = async (
  dynamo: BenchDynamo,
  sim: SimulatorProcess,
  options: ThroughputOptions,
  progress: (line: string) => void,
): Promise<ThroughputResult> => {
  const rawTable = await createTable(dynamo.raw, ledgerCreateTableInput, 'raw');
  const tables = await createLedgerTables(dynamo.raw, 'throughput');
  const { dispatcher } = wireDispatcher({ doc: dynamo.doc, simulatorUrl: sim.url, ...tables });
  const template = claimShapedRecord();
  let rawSeq = 0;
  let notificationSeq = 0;

  const rawWrite = async () => {
    const pk = `${template.pk}#raw${rawSeq++}`;
    await dynamo.doc.send(
      new PutCommand({
        TableName: rawTable,
        Item: { ...template, pk },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': LEDGER_TABLE.partitionKey },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  };
  // As the SQS event source delivers them: batches of 10, one gate-facts read per batch, records of a
  // batch run together; `concurrency` records are in flight in all.
  const batchSize = INTAKE_QUEUE.batchSize;
  const dispatchBatch = async (count: number) => {
    const bodies = Array.from({ length: count }, () => resetIntentBody(`tp-${notificationSeq++}`));
    let notAccepted = 0;
    const batches = Math.ceil(count / batchSize);
    const elapsed = await runPool(
      batches,
      Math.max(1, Math.round(options.concurrency / batchSize)),
      async (b) => {
        const batch = bodies.slice(b * batchSize, (b + 1) * batchSize);
        const facts = await dispatcher.prefetch(batch);
        const outcomes = await Promise.all(
          batch.map((body, i) => dispatcher.handle(body, { messageId: `tp-${b}-${i}` }, facts)),
        );
        notAccepted += outcomes.filter((o) => o.channels[0]?.state !== 'accepted').length;
      },
    );
    if (notAccepted > 0)
      throw new Error(`${notAccepted} of ${count} throughput notifications were not accepted`);
    return elapsed;
  };

  // The peer, for real: @aws-lambda-powertools/idempotency on the same DynamoDB Local, same concurrency.
  const peer = await powertoolsPeer(dynamo);
  let peerSeq = 0;
  const peerCall = () => peer.call(`peer-${peerSeq++}`);
  let peerRawSeq = 0;
  const peerRawWrite = () => peer.rawWrite(`${peerRawSeq++}`);

  progress(`throughput: warm-up (${options.warmup} raw writes, notifications and Powertools calls each)`);
  await runPool(options.warmup, options.concurrency, rawWrite);
  await dispatchBatch(options.warmup);
  await runPool(options.warmup, options.concurrency, peerCall);
  await runPool(options.warmup, options.concurrency, peerRawWrite);

  const rssBefore = process.memoryUsage.rss();
  let peakRss = rssBefore;
  const rounds: ThroughputRound[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    const rawMs = await runPool(options.rawWrites, options.concurrency, rawWrite);
    const rawWritesPerSecond = ratePerSecond(options.rawWrites, rawMs);
    // CPU time of this process (the dispatcher alone: the servers are other processes) is what Lambda
    // bills per notification, and unlike a rate it hardly moves with a neighbour's load.
    const cpuBefore = process.cpuUsage();
    const measured = await withPeakRss(() => dispatchBatch(options.notifications));
    const cpuMsPerNotification = cpuMs(process.cpuUsage(cpuBefore)) / options.notifications;
    peakRss = Math.max(peakRss, measured.peakRss);
    const dispatcherNotificationsPerSecond = ratePerSecond(options.notifications, measured.value);
    const ceiling = ratio(rawWritesPerSecond, options.writesPerNotification);
    const peerCpuBefore = process.cpuUsage();
    const peerMs = await runPool(options.notifications, options.concurrency, peerCall);
    const powertoolsCpuMsPerCall = cpuMs(process.cpuUsage(peerCpuBefore)) / options.notifications;
    const powertoolsCallsPerSecond = ratePerSecond(options.notifications, peerMs);
    const peerRawMs = await runPool(options.rawWrites, options.concurrency, peerRawWrite);
    const powertoolsRawWritesPerSecond = ratePerSecond(options.rawWrites, peerRawMs);
    rounds.push({
      round,
      rawWrites: options.rawWrites,
      rawWritesPerSecond,
      ceilingNotificationsPerSecond: ceiling,
      notifications: options.notifications,
      dispatcherNotificationsPerSecond,
      ratio: ratio(dispatcherNotificationsPerSecond, ceiling),
      cpuMsPerNotification,
      powertoolsCpuMsPerCall,
      powertoolsCallsPerSecond,
      powertoolsRawWritesPerSecond,
      // Powertools' own floor: two writes per call (the in-progress put and the completed update), at
      // the rate bare puts of its own record shape reach on its own table (the ledger's table has an
      // index and a stream, and its items carry history, so its raw rate is not Powertools' ceiling).
      powertoolsRatio: ratio(powertoolsCallsPerSecond, ratio(powertoolsRawWritesPerSecond, 2)),
    });
    progress(
      `throughput round ${round}/${options.rounds}: raw ${rawWritesPerSecond.toFixed(0)} writes/s, ` +
        `dispatcher ${dispatcherNotificationsPerSecond.toFixed(0)} notifications/s (ratio ${rounds.at(-1)!.ratio.toFixed(3)}, ${cpuMsPerNotification.toFixed(2)} CPU ms each), ` +
        `Powertools ${powertoolsCallsPerSecond.toFixed(0)} calls/s on ${powertoolsRawWritesPerSecond.toFixed(0)} raw writes/s of its own (ratio ${rounds.at(-1)!.powertoolsRatio.toFixed(3)})`,
    );
  }
  return {
    concurrency: options.concurrency,
    writesPerNotification: options.writesPerNotification,
    rounds,
    medianRatio: median(rounds.map((r) => r.ratio)),
    medianPowertoolsRatio: median(rounds.map((r) => r.powertoolsRatio)),
    medianCpuMsPerNotification: median(rounds.map((r) => r.cpuMsPerNotification ?? Number.NaN)),
    medianPowertoolsCpuMsPerCall: median(rounds.map((r) => r.powertoolsCpuMsPerCall ?? Number.NaN)),
    peakRssMb: peakRss / MB,
    rssBeforeMb: rssBefore / MB,
  };
};

/**
 * Sequential notifications (concurrency 1, so queueing does not blur the split) through a dispatcher
 * whose Ledger and Transport are wrapped in timing decorators: per notification, the time spent in ledger
 * calls versus the provider call.
 */
export const measureLatency = async (
  dynamo: BenchDynamo,
  sim: SimulatorProcess,
  count: number,
  progress: (line: string) => void,
): Promise<LatencyResult> => {
  const tables = await createLedgerTables(dynamo.raw, 'latency');
  const ledgerTimes = new TimeByKey();
  const transportTimes = new TimeByKey();
  const suppressionTimes = new TimeByKey();
  const { dispatcher } = wireDispatcher({
    doc: dynamo.doc,
    simulatorUrl: sim.url,
    ...tables,
    ledgerTimes,
    transportTimes,
    suppressionTimes,
  });
  const warmup = Math.min(20, count);
  for (let i = 0; i < warmup; i++)
    await dispatcher.handle(resetIntentBody(`lat-warm-${i}`), { messageId: `w${i}` });
  ledgerTimes.clear();
  transportTimes.clear();
  suppressionTimes.clear();
  const suppressionMs: number[] = [];
  const wallMs: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const outcome = await dispatcher.handle(resetIntentBody(`lat-${i}`), { messageId: `lat-${i}` });
    wallMs.push(performance.now() - started);
    const channel = outcome.channels[0];
    if (channel?.state !== 'accepted') throw new Error(`latency notification ${i} was not accepted`);
    // resetIntentBody names the recipient `user-<eventId>`; no extra (timed) ledger read to find it.
    suppressionMs.push(suppressionTimes.get(suppressionTimeKey(`user-lat-${i}`, 'email')) ?? 0);
  }
  const keys = transportTimes.keys();
  const ledgerMs = keys.map((k) => ledgerTimes.get(k) ?? 0);
  const transportMs = keys.map((k) => transportTimes.get(k) ?? 0);
  const share = keys.map((_, i) => ratio(ledgerMs[i]!, ledgerMs[i]! + transportMs[i]!));
  progress(`latency: ${keys.length} notifications timed`);
  return {
    notifications: keys.length,
    concurrency: 1,
    ledgerMs: summarize(ledgerMs),
    transportMs: summarize(transportMs),
    ledgerShare: summarize(share),
    suppressionMs: summarize(suppressionMs),
    notificationMs: summarize(wallMs),
  };
};
