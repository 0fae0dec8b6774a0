import type { CostFunction } from './costBench.js';
import type { CostRunResult } from './costRun.js';
import { COST_ITEMS, type CostItem, PRICES } from './prices.js';
import { renderTable } from './report.js';

/** Issue 27: at most $2.5 per million notifications on the realistic mix, provider fees excluded. */
export const COST_GOAL_PER_MILLION = 2.5;

const LABELS: Record<CostItem, string> = {
  dynamoWriteUnit: 'DynamoDB write request units',
  dynamoReadUnit: 'DynamoDB read request units (missing items billed)',
  s3Put: 'S3 PUT (archive objects)',
  s3Get: 'S3 GET',
  sqsRequest: 'SQS requests (10 messages / 64 KB a request, idle polls)',
  lambdaRequest: 'Lambda invocations',
  lambdaGbSecond: 'Lambda GB-seconds (estimated duration × memory)',
  kmsRequest: 'KMS requests',
  stepFunctionsTransition: 'Step Functions Standard transitions',
  schedulerInvocation: 'EventBridge Scheduler',
  eventBridgeEvent: 'EventBridge custom events (outcome events)',
  snsPublish: 'SNS publishes (SMS events only)',
  logIngestGb: 'CloudWatch Logs ingestion (GB)',
  customMetricMonth: 'CloudWatch custom metrics (metric-months)',
  xrayTrace: 'X-Ray traces recorded',
};

const usd = (v: number) => `$${v.toFixed(3)}`;
const num = (v: number) => (v === 0 ? '0' : v >= 0.01 ? String(Number(v.toFixed(4))) : v.toExponential(2));

const verdictLine = (label: string, value: number): string =>
  `${value <= COST_GOAL_PER_MILLION ? 'PASS' : 'MISS'}  ${label}: $${value.toFixed(3)} per million (goal <= $${COST_GOAL_PER_MILLION})`;

/** The tables `npm run bench:cost` prints and the README's cost section carries. */
export const renderCostReport = (result: CostRunResult, options: { runLine?: boolean } = {}): string => {
  const { report, measurement: m } = result;
  const services = [...new Set(COST_ITEMS.map((i) => PRICES.items[i].service))];
  const parts: string[] = [];
  if (options.runLine !== false)
    parts.push(
      `From \`${result.command}\` of ${result.startedAt.slice(0, 10)}, ${Math.round(result.durationMs / 1000)} s, ${result.machine.nproc} cores (shared, load average ${result.machine.loadAverageAtStart[0]?.toFixed(1)} at start), Node ${result.machine.node}; ${m.notifications} notifications through the production function entries; ${m.logLevel} log level.`,
      '',
    );
  parts.push(
    renderTable(
      [`service (us-east-1, prices of ${result.pricesAsOf})`, 'happy path', 'realistic mix'],
      [
        ...services.map((s) => [s, usd(report.happy.byService[s] ?? 0), usd(report.mix.byService[s] ?? 0)]),
        [
          '**total per million notifications**',
          `**${usd(report.happy.totalPerMillion)}**`,
          `**${usd(report.mix.totalPerMillion)}**`,
        ],
        [
          'for comparison: SES sending fee',
          usd(PRICES.references.sesEmail.usd * 1e6),
          usd(PRICES.references.sesEmail.usd * 1e6),
        ],
      ],
    ),
    '',
    renderTable(
      ['item', 'units / notification, happy', 'happy path', 'realistic mix'],
      COST_ITEMS.map((i) => [
        LABELS[i],
        num(report.happy.units[i]),
        usd(report.happy.perMillion[i]),
        usd(report.mix.perMillion[i]),
      ]),
    ),
    '',
    renderTable(
      [
        'function (memory)',
        'records / invocation',
        'invocations / notification',
        'wall ms (median)',
        'CPU ms (median)',
        'est. Lambda ms',
        'GB-s / notification',
        'log bytes / notification',
        'INFO lines / invocation',
      ],
      (Object.keys(report.functions) as CostFunction[]).map((f) => {
        const fn = report.functions[f];
        const measured = m.functions[f];
        return [
          `${f} (${measured.memoryMb} MB)`,
          String(m.batches[f]),
          num(fn.invocationsPerNotification),
          fn.medianWallMs.toFixed(1),
          fn.medianCpuMs.toFixed(1),
          fn.medianEstimatedMs.toFixed(1),
          num(fn.gbSecondsPerNotification),
          num(fn.logBytesPerNotification),
          num((measured.logLinesByLevel.INFO ?? 0) / Math.max(1, measured.invocations)),
        ];
      }),
    ),
    '',
    renderTable(
      ['the same run under another choice (not the default)', 'happy path', 'realistic mix'],
      (result.sensitivity ?? []).map((s) => [s.what, usd(s.happyPerMillion), usd(s.mixPerMillion)]),
    ),
    '',
    verdictLine('happy path', report.happy.totalPerMillion),
    '',
    verdictLine(
      'realistic mix (5 % retried once, 1 % unknown then reconciled, 1 % bounced)',
      report.mix.totalPerMillion,
    ),
  );
  return parts.join('\n');
};
