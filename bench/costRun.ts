import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { EVIDENCE_BATCH } from '../infra/constructs/EvidenceRecorder.js';
import { OUTCOME_BATCHING } from '../infra/constructs/OutcomeEvents.js';
import { DEFAULT_FUNCTION_MEMORY_MB } from '../infra/constructs/SendproofFunction.js';
import { DEFAULT_RECONCILE_EVERY_MINUTES } from '../infra/NotificationLedger.js';
import { ARCHIVE_BATCHING } from '../lib/archive/archiver.js';
import { INTAKE_QUEUE } from '../lib/queueDefinition.js';
import { type CostReport, costReport, type DeploymentShape, type LedgerScenarioRow, MIX } from './cost.js';
import { COST_FUNCTIONS, type CostFunction, type CostMeasurement, measureCostPhase } from './costBench.js';
import { COST_GOAL_PER_MILLION, renderCostReport } from './costReport.js';
import { PRICES } from './prices.js';
import {
  type BenchDynamo,
  createLedgerTables,
  dropTables,
  REPO_ROOT,
  type SimulatorProcess,
  startBenchDynamo,
  startSimulatorProcess,
} from './stack.js';
import { measureWriteUnits } from './writeUnits.js';

/**
 * npm run bench:cost [-- --notifications 200] [--out bench/results/cost.json] [--quiet]
 *
 * The cost phase on its own (about a minute): a fresh DynamoDB Local and the provider simulator, the
 * write-unit phase's ledger scenarios (the realistic mix's extras), then the production function entries
 * on the happy path (bench/costBench.ts). Prints dollars per million by service and the issue-27 goal
 * line; writes the measurement and the report as JSON. `npm run bench` runs it as a child process (the
 * function entries read their configuration on import) and prints the same tables.
 */
const { values } = parseArgs({
  options: {
    notifications: { type: 'string', default: '200' },
    out: { type: 'string' },
    quiet: { type: 'boolean', default: false },
  },
});
const outFile = resolve(values.out ?? join(REPO_ROOT, 'bench', 'results', 'cost.json'));
const t0 = performance.now();
const progress = (line: string) => {
  if (!values.quiet)
    console.log(`[bench:cost +${((performance.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${line}`);
};

/** The deployment as infra/ builds it: every function at the construct's default memory (none overrides it). */
const MEMORY_MB: Record<CostFunction, number> = Object.fromEntries(
  COST_FUNCTIONS.map((f) => [f, DEFAULT_FUNCTION_MEMORY_MB]),
) as Record<CostFunction, number>;

const SHAPE: DeploymentShape = {
  notificationsPerMonth: 10_000_000,
  publishBatchSize: 10,
  polledQueues: 2,
  reconcileRunsPerMonth: (30 * 24 * 60) / DEFAULT_RECONCILE_EVERY_MINUTES,
  stepFunctionsTransitionsPerRun: 4,
  tracing: true,
};

export interface CostRunResult {
  command: string;
  startedAt: string;
  durationMs: number;
  machine: { nproc: number; cpuModel: string; node: string; loadAverageAtStart: number[] };
  pricesAsOf: string;
  region: string;
  mix: typeof MIX;
  goalPerMillion: number;
  ledgerRows: LedgerScenarioRow[];
  measurement: CostMeasurement;
  report: CostReport;
  /** The same measurement under other deployment choices (not defaults): what each would change. */
  sensitivity: Array<{ what: string; happyPerMillion: number; mixPerMillion: number }>;
}

const main = async (): Promise<void> => {
  const startedAt = new Date().toISOString();
  const loadAverageAtStart = loadavg();
  let dynamo: BenchDynamo | undefined;
  let sim: SimulatorProcess | undefined;
  let result: CostRunResult;
  try {
    progress('starting a fresh DynamoDB Local and the provider simulator (loopback)');
    [dynamo, sim] = await Promise.all([startBenchDynamo(), startSimulatorProcess()]);
    const ledgerRows = (await measureWriteUnits(dynamo, sim, 5, progress))
      .filter((r) => r.approach === 'sendproof-ledger')
      .map(({ scenario, notifications, perNotification, readUnits, historyEntries }) => ({
        scenario,
        notifications,
        perNotification,
        readUnits,
        historyEntries,
      }));
    await sim.reset();
    await dropTables(dynamo.raw);
    const tables = await createLedgerTables(dynamo.raw, 'cost');
    const measurement = await measureCostPhase({
      dynamoEndpoint: dynamo.local.endpoint,
      raw: dynamo.raw,
      tables,
      simulatorUrl: sim.url,
      notifications: Number(values.notifications),
      memoryMb: MEMORY_MB,
      sources: {
        dispatchBatchSize: INTAKE_QUEUE.batchSize,
        evidence: EVIDENCE_BATCH,
        outcomes: OUTCOME_BATCHING,
        archive: ARCHIVE_BATCHING,
        notificationsPerMonth: SHAPE.notificationsPerMonth,
      },
      recordConcurrency: 5,
      progress,
    });
    result = {
      command: 'npm run bench:cost',
      startedAt,
      durationMs: 0,
      machine: {
        nproc: cpus().length,
        cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
        node: process.version,
        loadAverageAtStart,
      },
      pricesAsOf: PRICES.asOf,
      region: PRICES.region,
      mix: MIX,
      goalPerMillion: COST_GOAL_PER_MILLION,
      ledgerRows,
      measurement,
      report: costReport(measurement, SHAPE, ledgerRows),
      sensitivity: (
        [
          ['X-Ray tracing off on every function and the state machine', { ...SHAPE, tracing: false }],
          [
            'intents published one at a time (SendMessage, not batches of 10)',
            { ...SHAPE, publishBatchSize: 1 },
          ],
          [
            '1 million notifications a month (fixed costs and sampling only; batches as measured)',
            { ...SHAPE, notificationsPerMonth: 1_000_000 },
          ],
          [
            '100 million notifications a month (fixed costs and sampling only; batches as measured)',
            { ...SHAPE, notificationsPerMonth: 100_000_000 },
          ],
        ] as const
      ).map(([what, shape]) => {
        const r = costReport(measurement, shape, ledgerRows);
        return { what, happyPerMillion: r.happy.totalPerMillion, mixPerMillion: r.mix.totalPerMillion };
      }),
    };
  } finally {
    progress('stopping DynamoDB Local and the simulator');
    await Promise.allSettled([dynamo?.local.stop(), sim?.stop()]);
  }
  result.durationMs = Math.round(performance.now() - t0);
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify(result, null, 2)}\n`);
  if (!values.quiet) console.log(`\n${renderCostReport(result)}\n`);
  progress(`wrote ${relative(process.cwd(), outFile)}`);
};

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('cost run failed:', error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
