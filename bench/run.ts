import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { measureArchiveBatching } from './archiveBatching.js';
import { measureCapacity } from './capacityBench.js';
import { measureCli, renderCliTable } from './cliTimings.js';
import { measureColdStart } from './coldStart.js';
import { MIX, PRICES } from './cost.js';
import { COST_GOAL_PER_MILLION } from './costReport.js';
import type { CostRunResult } from './costRun.js';
import { measureEvidenceReads } from './evidenceReads.js';
import { measurePacingWrites } from './pacingWrites.js';
import { measureProtocolFloor } from './protocolFloor.js';
import { measureReconcileScaling } from './reconcileScaling.js';
import {
  readmeBenchSection,
  readmeCostSection,
  renderBarChart,
  renderBenchmarkDoc,
  renderSummary,
  replaceMarked,
} from './report.js';
import { type BenchResults, type MachineInfo, RESULTS_SCHEMA, type TargetResult } from './results.js';
import {
  type BenchDynamo,
  createLedgerTables,
  dropTables,
  REPO_ROOT,
  type SimulatorProcess,
  startBenchDynamo,
  startSimulatorProcess,
} from './stack.js';
import { type Goal, verdict } from './stats.js';
import { measureLatency, measureThroughput } from './throughput.js';
import { measureWriteUnits } from './writeUnits.js';

/**
 * npm run bench [-- --quick] [--out <file>] [--docs | --no-docs]
 *
 * One run, one fresh DynamoDB Local and one provider simulator on loopback, both stopped at the end.
 * Prints PASS/MISS per target and exits 0 unless the run itself failed; the JSON carries the verdicts.
 */
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    docs: { type: 'boolean' },
    'no-docs': { type: 'boolean' },
  },
});
const quick = values.quick === true;
const outFile = resolve(values.out ?? join(REPO_ROOT, 'bench', 'results', 'latest.json'));
// docs/benchmark.md keeps a full run; a quick smoke run leaves it alone unless asked.
const writeDocs = values['no-docs'] ? false : (values.docs ?? !quick);

const SIZES = quick
  ? {
      writeUnitCount: 3,
      floorBatches: 3,
      throughput: { rounds: 2, rawWrites: 300, notifications: 100, concurrency: 16, warmup: 50 },
      latency: 60,
      reconcileSizes: [1_000, 3_000],
      coldStartRuns: 3,
      archive: { notificationsPerSecond: 10, seconds: 15, tenants: 3 },
      cliRuns: 3,
      pacing: { notifications: 100, perSecond: 50, concurrency: 10, environments: [1, 4] },
      capacity: { count: 5, periodSeconds: 3, validation: { rate: 5, seconds: 20, periodSeconds: 3 } },
    }
  : {
      writeUnitCount: 10,
      floorBatches: 10,
      throughput: { rounds: 3, rawWrites: 1_500, notifications: 500, concurrency: 16, warmup: 100 },
      latency: 300,
      reconcileSizes: [1_000, 10_000],
      coldStartRuns: 7,
      archive: { notificationsPerSecond: 10, seconds: 60, tenants: 3 },
      cliRuns: 7,
      pacing: { notifications: 500, perSecond: 50, concurrency: 10, environments: [1, 4] },
      capacity: { count: 20, periodSeconds: 3, validation: { rate: 8, seconds: 40, periodSeconds: 4 } },
    };

const t0 = performance.now();
const progress = (line: string) =>
  console.log(`[bench +${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);

const machine = (): MachineInfo => {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  const cpu = cpus();
  return {
    nproc: cpu.length,
    memoryMb: Math.round(totalmem() / 1024 / 1024),
    cpuModel: cpu[0]?.model.trim() ?? 'unknown',
    platform: `${process.platform} ${process.arch}`,
    node: process.version,
    loadAverage: loadavg(),
    java: (java.stderr || java.stdout || 'not found').split('\n')[0]!.trim(),
  };
};

const target = (id: string, description: string, measured: number | undefined, goal: Goal): TargetResult => {
  const value = measured ?? Number.NaN;
  return { id, description, measured: value, goal, verdict: verdict(value, goal) };
};

const main = async (): Promise<void> => {
  const startedAt = new Date().toISOString();
  progress(`mode ${quick ? 'quick' : 'full'}; results → ${relative(process.cwd(), outFile)}`);
  const results: BenchResults = {
    schema: RESULTS_SCHEMA,
    mode: quick ? 'quick' : 'full',
    command: `npm run bench${quick ? ' -- --quick' : ''}`,
    startedAt,
    finishedAt: startedAt,
    durationMs: 0,
    machine: machine(),
    targets: [],
  };

  let dynamo: BenchDynamo | undefined;
  let sim: SimulatorProcess | undefined;
  try {
    progress('starting a fresh DynamoDB Local and the provider simulator (loopback)');
    [dynamo, sim] = await Promise.all([startBenchDynamo(), startSimulatorProcess()]);
    progress(`DynamoDB Local ${dynamo.local.endpoint} (pid ${dynamo.local.pid}); simulator ${sim.url}`);

    results.writeUnits = await measureWriteUnits(dynamo, sim, SIZES.writeUnitCount, progress);
    await sim.reset();
    await dropTables(dynamo.raw);
    results.protocolFloor = await measureProtocolFloor(dynamo, sim, SIZES.floorBatches, progress);
    await sim.reset();
    await dropTables(dynamo.raw);
    // The ceiling a notification can reach: raw conditional writes/s ÷ DynamoDB requests per notification.
    const writesPerNotification = results.protocolFloor.requestsPerNotification;

    results.throughput = await measureThroughput(
      dynamo,
      sim,
      { ...SIZES.throughput, writesPerNotification },
      progress,
    );
    await sim.reset();
    await dropTables(dynamo.raw);
    results.latency = await measureLatency(dynamo, sim, SIZES.latency, progress);
    await sim.reset();
    await dropTables(dynamo.raw);
    results.reconcile = await measureReconcileScaling(dynamo, sim, SIZES.reconcileSizes, 100, progress);
    await dropTables(dynamo.raw);
    results.archive = await measureArchiveBatching(dynamo, SIZES.archive, progress);
    progress(
      `archive: ${results.archive.puts} objects for ${results.archive.transitions} transitions = ${results.archive.objectsPer100Transitions.toFixed(2)} per 100 (per-record layout: ${results.archive.objectsPer100TransitionsBefore.toFixed(0)})`,
    );
    const { ledgerTable } = await createLedgerTables(dynamo.raw, 'evreads');
    results.evidenceReads = await measureEvidenceReads(dynamo.doc, ledgerTable, [100, 10_000], progress);
    results.cli = await measureCli(dynamo, SIZES.cliRuns, progress);
    await sim.reset();
    results.pacing = await measurePacingWrites(dynamo, sim, SIZES.pacing, progress);
    // Last: the capacity model's costs through the real pipeline, and the model against a run of it.
    const capacity = await measureCapacity(dynamo.local.endpoint, results, SIZES.capacity, progress);
    results.capacity = capacity.costs;
    results.capacityValidation = capacity.validation;
  } finally {
    progress('stopping DynamoDB Local and the simulator');
    await Promise.allSettled([dynamo?.local.stop(), sim?.stop()]);
  }
  // Cold start needs no server: fresh node processes import the bundle.
  results.coldStart = await measureColdStart(SIZES.coldStartRuns, progress);

  const floor = results.protocolFloor;
  // The cost phase imports the production function entries, which read their configuration on import:
  // it runs in its own process (bench/costRun.ts, also `npm run bench:cost`), after the servers above
  // stopped, and hands its measurement and report over as JSON.
  const costFile = join(dirname(outFile), 'cost.json');
  progress('cost phase (npm run bench:cost) in its own process');
  const costRun = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'bench/costRun.ts', '--out', costFile, ...(quick ? ['--notifications', '100'] : [])],
    { cwd: REPO_ROOT, stdio: 'inherit', env: process.env },
  );
  if (costRun.status === 0) {
    const run = JSON.parse(readFileSync(costFile, 'utf8')) as CostRunResult;
    const { shape } = run.report;
    results.cost = {
      run,
      pricesAsOf: run.pricesAsOf,
      region: run.region,
      assumptions: {
        ...Object.fromEntries(
          Object.entries(shape).map(([k, v]) => [
            k,
            typeof v === 'number' ? Number(v.toFixed(2)) : String(v),
          ]),
        ),
        mix: `${MIX.retry * 100} % retried once, ${MIX.unknown * 100} % unknown then reconciled, ${MIX.bounce * 100} % bounced`,
      },
      scenarios: [
        {
          name: 'happy',
          description: 'happy path',
          totalPerMillion: run.report.happy.totalPerMillion,
          perMillion: run.report.happy.perMillion,
          units: run.report.happy.units,
          byService: run.report.happy.byService,
        },
        {
          name: 'realistic_mix',
          description: 'realistic mix (5 % retries, 1 % unknown, 1 % bounces)',
          totalPerMillion: run.report.mix.totalPerMillion,
          perMillion: run.report.mix.perMillion,
          units: run.report.mix.units,
          byService: run.report.mix.byService,
        },
      ],
      references: {
        sesPerMillion: PRICES.references.sesEmail.usd * 1e6,
        hostedPlatformPerMillion: PRICES.references.hostedPlatform.usd * 1e6,
        hostedPlatformSource: PRICES.references.hostedPlatform.source,
      },
    };
  } else progress(`cost phase failed (exit ${costRun.status}); no cost section this run`);
  const happyCost = results.cost?.scenarios.find((c) => c.name === 'happy');
  const deliveredWcu =
    floor !== undefined
      ? floor.writeUnitsPerNotification +
        floor.evidence.eventsPerNotification * floor.evidence.writeUnitsPerEvent
      : undefined;
  if (happyCost)
    progress(
      `per delivered notification: ${deliveredWcu} WCU with its evidence, ${(happyCost.units.lambdaRequest ?? Number.NaN).toFixed(3)} Lambda invocations (evidence read from its queue in batches)`,
    );
  const reconcile = results.reconcile;
  const cold = results.coldStart;
  results.targets = [
    // Issue 27: dispatch 2 + one delivery fact; the provider's Send of the recorded message writes nothing.
    target(
      'wcu_delivered',
      'WCU per delivered notification, its SES Send and Delivery evidence included',
      deliveredWcu,
      { op: '<=', value: 3 },
    ),
    target(
      'invocations_happy',
      'Lambda invocations per notification, happy path, every function (dispatch, evidence, outcomes, archive, the reconcile schedule; bench:cost)',
      happyCost?.units.lambdaRequest,
      { op: '<=', value: 0.3 },
    ),
    // The protocol floor: the claim (written as dispatching) and the outcome, full history, no pointer.
    target(
      'wcu_happy',
      'WCU per notification, happy path, full history (SQS batches)',
      floor?.writeUnitsPerNotification,
      {
        op: '<=',
        value: 2,
      },
    ),
    target(
      'requests_happy',
      'DynamoDB requests per notification, happy path (SQS batches)',
      floor?.requestsPerNotification,
      {
        op: '<=',
        value: 2.1,
      },
    ),
    target(
      'cost_happy',
      'USD per million notifications, happy path, excluding provider fees',
      results.cost ? Number(results.cost.scenarios[0]!.totalPerMillion.toFixed(3)) : undefined,
      { op: '<=', value: COST_GOAL_PER_MILLION },
    ),
    // Issue 27's goal: the realistic mix, with the breakdown by service (bench/costReport.ts).
    target(
      'cost_mix',
      'USD per million notifications, realistic mix, excluding provider fees',
      results.cost ? Number(results.cost.scenarios[1]!.totalPerMillion.toFixed(3)) : undefined,
      { op: '<=', value: COST_GOAL_PER_MILLION },
    ),
    target(
      'ratio_vs_powertools',
      'throughput ratio to own floor: Sendproof − Powertools (median)',
      results.throughput
        ? results.throughput.medianRatio - results.throughput.medianPowertoolsRatio
        : undefined,
      { op: '>=', value: 0 },
    ),
    target(
      'evidence_reads_flat',
      'read units per Delivery event, 10,000 waiting rows / 100 waiting rows',
      results.evidenceReads
        ? results.evidenceReads.at(-1)!.deliveryReadUnits / results.evidenceReads[0]!.deliveryReadUnits
        : undefined,
      { op: '==', value: 1 },
    ),
    target(
      'evidence_reads_max',
      'read units per evidence event (max of delivery and settle, 10,000 waiting rows)',
      results.evidenceReads
        ? Math.max(
            results.evidenceReads.at(-1)!.deliveryReadUnits,
            results.evidenceReads.at(-1)!.settleReadUnits,
          )
        : undefined,
      { op: '<=', value: 2 },
    ),
    target(
      'throughput_ratio',
      'dispatcher / raw ceiling throughput (median)',
      results.throughput?.medianRatio,
      {
        op: '>=',
        value: 0.9,
      },
    ),
    target(
      'reconcile_reads_flat',
      `reconcile read units, ${reconcile?.rows.at(-1)?.tableRows} rows / ${reconcile?.rows[0]?.tableRows} rows`,
      reconcile ? reconcile.rows.at(-1)!.readUnits / reconcile.rows[0]!.readUnits : undefined,
      { op: '==', value: 1 },
    ),
    target(
      'pacing_wcu',
      'WCU the shared send pace adds per notification, 4 environments at 50/s',
      results.pacing?.find((r) => r.environments === 4)?.writeUnitsPerNotification,
      { op: '<=', value: 1 },
    ),
    target(
      'capacity_model',
      'capacity model vs the pipeline: worst deviation of the held quantities (npm run capacity -- --validate)',
      results.capacityValidation
        ? Number(
            Math.max(
              ...results.capacityValidation.rows.filter((r) => r.held).map((r) => r.deviation),
            ).toFixed(3),
          )
        : undefined,
      { op: '<=', value: 0.2 },
    ),
    target('cold_start', 'bundled dispatcher module init, median ms', cold.medianInitMs, {
      op: '<',
      value: 150,
    }),
    target(
      'cold_start_ratio',
      'dispatcher module init ÷ DynamoDB-only reference bundle (medians, same run)',
      Number((cold.medianInitMs / cold.medianReferenceInitMs).toFixed(2)),
      { op: '<=', value: 1.5 },
    ),
    target(
      'archive_objects_per_100',
      `archive objects per 100 transitions at ${SIZES.archive.notificationsPerSecond} notifications/s, ${SIZES.archive.tenants} tenants`,
      results.archive ? Number(results.archive.objectsPer100Transitions.toFixed(2)) : undefined,
      { op: '<=', value: 1 },
    ),
    ...(results.cli?.rows ?? []).map((row) =>
      target(
        `cli_${row.command.replace(/^sendproof -*/, '')}`,
        `${row.command} wall time, median ms`,
        row.medianMs,
        { op: '<=', value: 600 },
      ),
    ),
  ];
  results.finishedAt = new Date().toISOString();
  results.durationMs = Math.round(performance.now() - t0);

  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify(results, null, 2)}\n`);
  const chart = renderBarChart(
    'Write units per notification (AWS billing)',
    (results.writeUnits ?? []).map((r) => ({
      label: `${r.scenario} · ${r.approach}`,
      value: r.billedPerNotification,
    })),
    ' WCU',
  );
  const chartFile = `${outFile.replace(/\.json$/, '')}.svg`;
  writeFileSync(chartFile, chart);
  if (writeDocs) {
    const docFile = join(REPO_ROOT, 'docs', 'benchmark.md');
    mkdirSync(dirname(docFile), { recursive: true });
    writeFileSync(docFile, renderBenchmarkDoc(results, relative(dirname(docFile), chartFile)));
    // The committed doc must pass `npm run lint` (Biome formats Markdown tables): let it lay them out.
    const biome = spawnSync(
      join(REPO_ROOT, 'node_modules', '.bin', 'biome'),
      ['format', '--write', docFile],
      {
        cwd: REPO_ROOT,
        encoding: 'utf8',
      },
    );
    if (biome.status !== 0) progress(`biome could not format ${relative(process.cwd(), docFile)}`);
    progress(`wrote ${relative(process.cwd(), docFile)}`);
    // The README's marked sections (bench:summary, bench:cost) come from the same run.
    const readme = join(REPO_ROOT, 'README.md');
    const before = readFileSync(readme, 'utf8');
    const after = replaceMarked(
      replaceMarked(before, 'summary', readmeBenchSection(results)),
      'cost',
      readmeCostSection(results),
    );
    if (after !== before) {
      writeFileSync(readme, after);
      spawnSync(join(REPO_ROOT, 'node_modules', '.bin', 'biome'), ['format', '--write', readme], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
      });
      progress(`updated the marked sections of ${relative(process.cwd(), readme)}`);
    }
  }
  console.log(`\n${renderSummary(results)}\n`);
  if (results.cli) console.log(`${renderCliTable(results.cli)}\n`);
  for (const t of results.targets)
    console.log(`${t.verdict}  ${t.description}: ${t.measured} (goal ${t.goal.op} ${t.goal.value})`);
  progress(`wrote ${relative(process.cwd(), outFile)} and ${relative(process.cwd(), chartFile)}`);
};

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('benchmark run failed:', error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
