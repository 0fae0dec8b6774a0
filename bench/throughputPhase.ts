import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { INTAKE_QUEUE } from '../lib/queueDefinition.js';
import { measureProtocolFloor } from './protocolFloor.js';
import { describeSdkSendCost, measureSdkSendCost } from './sdkSendCost.js';
import {
  type BenchDynamo,
  createLedgerTables,
  dropTables,
  resetIntentBody,
  type SimulatorProcess,
  startBenchDynamo,
  startSimulatorProcess,
  wireDispatcher,
} from './stack.js';
import { measureThroughput, runPool } from './throughput.js';

/**
 * npm run bench:throughput [-- --rounds 5] [--notifications 500] [--raw-writes 1500] [--json]
 * npm run bench:throughput -- --profile dispatcher.cpuprofile [--notifications 1000]
 * npm run bench:throughput -- --sdk-send
 *
 * The throughput phase of `npm run bench` alone (issue 27): a fresh DynamoDB Local and simulator, the
 * protocol floor (its requests per notification set the ceiling), then the alternating rounds. Writes no
 * results file and no docs. With `--profile`, no rounds: the V8 CPU profile (the format `node
 * --cpu-prof` writes) of the dispatcher alone, warmed up, taking `--notifications` as the throughput
 * rounds do (batches of 10, 16 in flight), so neither the raw writes nor the Powertools peer are in it.
 * `tsx bench/cpuProfileTop.ts <file>` lists its top self-time functions. With `--sdk-send`, no servers:
 * the SDK's CPU per request with and without the resolved handler (bench/sdkSendCost.ts).
 */
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    notifications: { type: 'string', default: '500' },
    'raw-writes': { type: 'string', default: '1500' },
    concurrency: { type: 'string', default: '16' },
    warmup: { type: 'string', default: '100' },
    json: { type: 'boolean', default: false },
    profile: { type: 'string' },
    'sdk-send': { type: 'boolean', default: false },
  },
});

const t0 = performance.now();
const progress = (line: string) =>
  console.log(`[throughput +${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);

const main = async () => {
  if (values['sdk-send']) {
    progress(describeSdkSendCost(await measureSdkSendCost()));
    return;
  }
  let dynamo: BenchDynamo | undefined;
  let sim: SimulatorProcess | undefined;
  try {
    [dynamo, sim] = await Promise.all([startBenchDynamo(), startSimulatorProcess()]);
    if (values.profile) {
      await profileDispatcher(dynamo, sim, values.profile);
      return;
    }
    const floor = await measureProtocolFloor(dynamo, sim, 3, progress);
    await sim.reset();
    await dropTables(dynamo.raw);
    const result = await measureThroughput(
      dynamo,
      sim,
      {
        rounds: Number(values.rounds),
        rawWrites: Number(values['raw-writes']),
        notifications: Number(values.notifications),
        concurrency: Number(values.concurrency),
        warmup: Number(values.warmup),
        writesPerNotification: floor.requestsPerNotification,
      },
      progress,
    );
    progress(
      `median ratio ${result.medianRatio.toFixed(3)} (Powertools ${result.medianPowertoolsRatio.toFixed(3)}), ` +
        `CPU ${result.medianCpuMsPerNotification?.toFixed(2)} ms per notification (Powertools ${result.medianPowertoolsCpuMsPerCall?.toFixed(2)} ms per call)`,
    );
    if (values.json) console.log(JSON.stringify(result));
  } finally {
    await Promise.allSettled([dynamo?.local.stop(), sim?.stop()]);
  }
};

const profileDispatcher = async (dynamo: BenchDynamo, sim: SimulatorProcess, file: string) => {
  const tables = await createLedgerTables(dynamo.raw, 'profile');
  const { dispatcher } = wireDispatcher({ doc: dynamo.doc, simulatorUrl: sim.url, ...tables });
  let seq = 0;
  const run = async (count: number) => {
    const batch = INTAKE_QUEUE.batchSize;
    await runPool(
      Math.ceil(count / batch),
      Math.max(1, Math.round(Number(values.concurrency) / batch)),
      async (b) => {
        const bodies = Array.from({ length: batch }, () => resetIntentBody(`prof-${seq++}`));
        const facts = await dispatcher.prefetch(bodies);
        const outcomes = await Promise.all(
          bodies.map((body, i) => dispatcher.handle(body, { messageId: `prof-${b}-${i}` }, facts)),
        );
        if (outcomes.some((o) => o.channels[0]?.state !== 'accepted')) throw new Error('not accepted');
      },
    );
  };
  await run(Number(values.warmup) * 2);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run(Number(values.notifications));
  const elapsed = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  writeFileSync(file, JSON.stringify(profile));
  const n = Number(values.notifications);
  progress(
    `profiled ${n} notifications: ${((n / elapsed) * 1000).toFixed(0)}/s, ${((used.user + used.system) / 1000 / n).toFixed(2)} CPU ms each (profiler on) → ${file}`,
  );
};

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(
      'throughput phase failed:',
      error instanceof Error ? (error.stack ?? error.message) : error,
    );
    process.exit(1);
  },
);
