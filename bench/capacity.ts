import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CAPACITY_PURPOSES, measureCapacityCosts } from './capacityCosts.js';
import { costsFromBench, MissingMeasurementError } from './capacityInputs.js';
import { loadMix, MixError } from './capacityMix.js';
import { capacityReport } from './capacityModel.js';
import { startPipeline } from './capacityPipeline.js';
import {
  formatNumber,
  formatUsd,
  renderCostsMarkdown,
  renderMarkdownSections,
  renderText,
  renderValidationMarkdown,
  renderValidationText,
} from './capacityReport.js';
import { compareRun, runValidation } from './capacityValidate.js';
import { PRICES } from './cost.js';
import type { BenchResults } from './results.js';
import { REPO_ROOT } from './stack.js';

const USAGE = `npm run capacity -- --rate <notifications/s> [--mix <file>] [--results <file>] [--json]
npm run capacity -- --validate [--rate 8] [--seconds 40] [--period 4] [--mix <file>] [--json] [--write]
npm run capacity -- --measure [--count 20] [--period 3]   (the bench's capacity section, merged into --results)
npm run capacity -- --doc                                (docs/capacity.md at 100, 1,000 and 10,000/s)

  --mix       traffic mix (JSON, see bench/capacity.mix.json); default bench/capacity.mix.json
  --results   the benchmark's result file; default bench/results/latest.json`;

const { values } = parseArgs({
  options: {
    rate: { type: 'string' },
    mix: { type: 'string' },
    results: { type: 'string' },
    json: { type: 'boolean', default: false },
    validate: { type: 'boolean', default: false },
    measure: { type: 'boolean', default: false },
    doc: { type: 'boolean', default: false },
    write: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    period: { type: 'string' },
    count: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

const DOC_RATES = [100, 1_000, 10_000];
const mixFile = resolve(values.mix ?? join(REPO_ROOT, 'bench', 'capacity.mix.json'));
const resultsFile = resolve(values.results ?? join(REPO_ROOT, 'bench', 'results', 'latest.json'));

const positive = (name: string, raw: string | undefined, fallback?: number): number => {
  if (raw === undefined) {
    if (fallback !== undefined) return fallback;
    throw new UsageError(`--${name} is required`);
  }
  const x = Number(raw);
  if (!Number.isFinite(x) || x <= 0)
    throw new UsageError(`--${name} must be a positive number, got "${raw}"`);
  return x;
};

class UsageError extends Error {}

const readResults = (): BenchResults => JSON.parse(readFileSync(resultsFile, 'utf8')) as BenchResults;

/** Merges one section into the result file, leaving the rest of the run as it was. */
const mergeIntoResults = (section: Partial<BenchResults>) => {
  const results = readResults();
  writeFileSync(resultsFile, `${JSON.stringify({ ...results, ...section }, null, 2)}\n`);
  console.log(`merged ${Object.keys(section).join(', ')} into ${relative(process.cwd(), resultsFile)}`);
};

const progress = (line: string) => {
  if (!values.json) console.error(line);
};

const main = async (): Promise<number> => {
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.measure) {
    const pipeline = await startPipeline({ purposes: CAPACITY_PURPOSES, progress });
    try {
      const capacity = await measureCapacityCosts(pipeline, {
        count: positive('count', values.count, 20),
        periodMs: positive('period', values.period, 3) * 1000,
        command: 'npm run capacity -- --measure',
        progress,
      });
      mergeIntoResults({ capacity });
    } finally {
      await pipeline.stop();
    }
    return 0;
  }
  const mix = loadMix(mixFile);
  const costs = costsFromBench(readResults(), relative(process.cwd(), resultsFile));
  if (values.validate) {
    const pipeline = await startPipeline({ purposes: CAPACITY_PURPOSES, progress });
    try {
      const run = await runValidation(pipeline, mix, {
        rate: positive('rate', values.rate, 8),
        seconds: positive('seconds', values.seconds, 40),
        periodSeconds: positive('period', values.period, 4),
        pollers: 2,
        progress,
      });
      const result = compareRun(costs, run);
      console.log(values.json ? JSON.stringify(result, null, 2) : renderValidationText(result));
      if (values.write) mergeIntoResults({ capacityValidation: result });
      return result.passed ? 0 : 1;
    } finally {
      await pipeline.stop();
    }
  }
  if (values.doc) {
    const results = readResults();
    const docFile = join(REPO_ROOT, 'docs', 'capacity.md');
    writeFileSync(docFile, renderDoc(mix, costs, results, relative(REPO_ROOT, mixFile)));
    spawnSync(join(REPO_ROOT, 'node_modules', '.bin', 'biome'), ['format', '--write', docFile], {
      cwd: REPO_ROOT,
    });
    console.log(`wrote ${relative(process.cwd(), docFile)}`);
    return 0;
  }
  const rate = positive('rate', values.rate);
  const report = capacityReport(costs, mix, rate);
  console.log(values.json ? JSON.stringify(report, null, 2) : renderText(report, mix, costs));
  return 0;
};

/** The first limit when no unknown row waits for a reconcile visit (the example assumes one each). */
const sensitivity = (costs: ReturnType<typeof costsFromBench>, mix: ReturnType<typeof loadMix>): string => {
  if (mix.deployment.reconcile.unknownWaitRuns === 0) return '';
  const none = {
    ...mix,
    deployment: { ...mix.deployment, reconcile: { ...mix.deployment.reconcile, unknownWaitRuns: 0 } },
  };
  const first = capacityReport(costs, none, 100).firstLimit;
  return `The mix assumes every \`unknown\` row waits for ${mix.deployment.reconcile.unknownWaitRuns} reconcile visit(s) (\`unknownWaitRuns\`: a provider whose events can be lost and that has no lookup). If none did (every one settled by its provider event or a replay first), the first limit would be ${first ? `${first.what}, at ${formatNumber(first.hitsAtRate)} notifications/s` : 'none below 10⁸ notifications/s'}.`;
};

/** The capacity section's happy path beside the protocol floor's, measured by a different phase. */
const crossCheck = (costs: ReturnType<typeof costsFromBench>, results: BenchResults): string => {
  const floor = results.protocolFloor;
  if (!floor) return '';
  const email = costs.scenarios.email;
  const dispatchWcu = email.dispatch.ledger?.writeUnits ?? 0;
  const pulled = (email.reconcile.ledger?.writeUnits ?? 0) / Math.max(1e-9, email.events);
  return `Cross-check against the benchmark's protocol-floor phase (the SQS handler called directly, SES-shaped events): a happy email's dispatch is ${formatNumber(dispatchWcu, 2)} WCU here and ${formatNumber(floor.writeUnitsPerNotification, 2)} WCU there; an event ${formatNumber(pulled, 2)} WCU here (pulled) and ${formatNumber(floor.evidence.writeUnitsPerEvent, 2)} WCU there (pushed).`;
};

const renderDoc = (
  mix: ReturnType<typeof loadMix>,
  costs: ReturnType<typeof costsFromBench>,
  results: BenchResults,
  mixPath: string,
): string => {
  const reports = DOC_RATES.map((rate) => capacityReport(costs, mix, rate));
  const first = reports[0]!.firstLimit;
  const total = (r: (typeof reports)[number], f: 'writeUnits' | 'readUnits') =>
    Object.values(r.model.dynamo).reduce((sum, u) => sum + u[f], 0);
  const summary = reports.map((r) => {
    const top = r.limits[0]!;
    return `| ${formatNumber(r.model.rate)} | ${formatNumber(r.model.lambda.reduce((sum, f) => sum + f.concurrency, 0))} | ${formatNumber(total(r, 'writeUnits'))} | ${formatNumber(total(r, 'readUnits'))} | ${formatUsd(r.model.costPerMonth.total)} | ${top.what} (${formatNumber(top.utilization * 100)} % used) |`;
  });
  const validation = results.capacityValidation;
  return `# Capacity

<!-- Generated by \`npm run capacity -- --doc\` from bench/results/latest.json and ${mixPath}; do not edit by hand. -->

What a deployment needs at a given rate, with reconciliation enabled, computed by \`npm run capacity --
--rate <notifications/s> --mix <file>\` from the per-notification costs the benchmark measures. Nothing
in the model is a guess about Sendproof's own behaviour: every DynamoDB unit, delivery, event, transition
and SQS request per notification comes from bench/results/latest.json; the model only composes them by
the mix and the deployment's settings, and holds them against published limits.

Inputs of this page: bench run of ${costs.source.benchStartedAt} (${costs.source.benchMode}), capacity
section measured ${costs.source.capacityMeasuredAt} by \`${costs.source.capacityCommand}\`, mix
\`${mixPath}\` ("${mix.name}").

## How it is computed

- **Per-notification costs** (the bench's \`capacity\` section, bench/capacityCosts.ts): notifications of
  each kind — a password reset by email, by SMS through a spend breaker, a cancellable receipt, an email
  answered 429 once, one whose answer is lost (\`unknown\`), one that bounces — run through the real
  pipeline on the local stack (bench/capacityPipeline.ts: the production function entries over DynamoDB
  Local, fauxqs and the provider simulator, the reconcile schedule driven page by page). Each function
  reaches DynamoDB through its own metering proxy that asks for \`ReturnConsumedCapacity: INDEXES\`, so
  units are measured per function, per table and per index, with the item sizes the code really writes.
  The gate-facts read of a queue batch and an idle reconcile run (sweep, census, feed cursor, an empty
  page) are measured apart: they are paid per batch and per run, not per notification. So is the
  transport-hold gate's read (\`hold#<transport>\`, lib/rate/TransportHolds.ts), which a clear answer
  caches per process for 5 s. Each kind's run lasts until the sweep has released every seal it wrote
  (lib/reconcile/Sweeper.ts, a parking grace after the row settled: a DeleteItem on the table and the
  attention index), so that cost is its own and no seal is left for the next kind or the validation.
- **Composition**: per notification = Σ purpose share × channel share × its kind + Σ rate × (faulted
  kind − happy email); a fault's extra provider calls on a cancellable email each read the cancel marker
  again (lib/dispatch/phases/confirm.ts reads it after every \`dispatching\` write). The hold gate: per
  dispatcher environment and transport, one refresh per 5 s (at most one per record) × the measured
  reads per refresh. Pushed evidence (SES/SMS events through EventBridge to the evidence function, the
  AWS default) is costed with the protocol floor's units per event; the harness's own pull feed work is
  taken out of the reconcile function's share.
- **Lambda** by Little's law: dispatcher invocations = first deliveries ÷ the publisher's batch (a
  SendMessageBatch of ${mix.deployment.publishBatchSize} arrives together) + redeliveries ÷ what a poller finds during one batch's
  cycle (between 1 and the batch size); concurrency = invocations/s × duration, from the latency phase's
  measured dispatch time (on DynamoDB Local: an upper bound for AWS).
- **Reconciliation**: every run pays the idle run's reads; the rows it visits (the measured share, plus
  \`unknownWaitRuns\` visits per unknown row that nothing else settles) take pages of ${mix.deployment.reconcile.pageSize}, at most
  ${mix.deployment.reconcile.maxPagesPerRun} per run — beyond that the backlog grows run after run.
- **Hot partitions**: one item, or one index key, is bounded by one partition — "each individual partition
  is limited to 1,000 write units per second and 3,000 read units per second"
  ([DynamoDB Developer Guide](${'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html'}); the same
  for an index's partitions: [key range throughput exceeded](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html)).
  Checked: each spend breaker's counter item (every counted SMS writes it), each paced channel's active
  slot item, the largest tenant's quota item, each attention-index shard of each state. Table quotas:
  40,000 read and 40,000 write request units per on-demand table
  ([quotas](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html)); Lambda:
  1,000 concurrent executions per Region by default
  ([quotas](https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)), an SQS event
  source at most 1,000 concurrent batches
  ([scaling](https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html)); SES and SMS at the
  account rates the mix states ([SES quotas](https://docs.aws.amazon.com/ses/latest/dg/quotas.html),
  [SMS MPS](https://docs.aws.amazon.com/sms-voice/latest/userguide/sms-limitations-mps.html)).
- **Dollars** with bench/prices.ts's dated price table (${PRICES.region} on-demand list prices of ${PRICES.asOf}); SES's
  fee is shown for reference, SMS fees (by country) are not included.
- **The first limit** is found by bisection over the model itself: the lowest rate at which any limit's
  use reaches 100 %.

What the model does not know: latencies on AWS (DynamoDB Local is slower, so concurrency is
overstated), DynamoDB's minimum charges for empty queries and misses that DynamoDB Local reports as 0
(the idle run's 50 index queries cost at most 25 read units on AWS), and any provider's behaviour beyond
the simulator's: an \`unknown\` row here is replayed under the REST convention's key at once, while with
SES it waits for the Send event (\`unknownWaitRuns\` says how long). Nor does it charge the census's
head read of each parked shard per run while a seal waits (lib/reconcile/Reconciler.ts
\`oldestNonTerminalAgeSeconds\`: about 0.5 RCU per non-empty shard per run, for a seal's parking grace),
which follows runs and shards, not notifications: a few RCU per run at most (the validation's attention
RCU row, not held).

## The measured costs

${renderCostsMarkdown(costs)}

${crossCheck(costs, results)}

## The mix

\`\`\`json
${readFileSync(resolve(REPO_ROOT, mixPath), 'utf8').trim()}
\`\`\`

## Summary

| notifications/s | Lambda concurrency | WCU/s | RCU/s | per month | the limit reached first, and its use at that rate |
| ---: | ---: | ---: | ---: | ---: | --- |
${summary.join('\n')}

${sensitivity(costs, mix)}

**First limit the design hits: ${first ? `${first.what}, at ${Math.round(first.hitsAtRate).toLocaleString('en-US')} notifications/s. What moves it: ${first.moves}.` : 'none below 10⁸ notifications/s.'}**

${reports.map((r) => `## At ${r.model.rate.toLocaleString('en-US')} notifications per second\n\n${renderMarkdownSections(r)}`).join('\n\n')}

## Validation

\`npm run capacity -- --validate\` runs the real pipeline on the local stack at a modest rate (this
machine's) with the mix above (faults apportioned exactly, events pulled by the reconcile run as the
harness's provider offers them, intents published 10 per SendMessageBatch), counts every unit, invocation and request,
and prints them beside the model's prediction for the same run from the costs in
bench/results/latest.json. A unit test checks the model's arithmetic against hand-computed cases
(test/unit/bench/capacityModel.test.ts); an integration test runs the validation at a small scale
(test/integration/bench/capacityValidate.test.ts).

${validation ? renderValidationMarkdown(validation) : '_Not recorded yet: run `npm run capacity -- --validate --write`, then `npm run capacity -- --doc`._'}
`;
};

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    if (error instanceof MixError || error instanceof MissingMeasurementError) {
      console.error(error.message);
      process.exit(2);
    }
    console.error('capacity failed:', error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
