import { SCENARIO_NAMES } from './capacityCosts.js';
import type { CapacityCosts } from './capacityInputs.js';
import type { Mix } from './capacityMix.js';
import { type CapacityReport, LIMITS, type LimitAt } from './capacityModel.js';
import type { ValidationResult } from './capacityValidate.js';
import { PRICES } from './cost.js';

/** Text (terminal) and Markdown (docs/capacity.md) renderings of the capacity model and its validation. */

const fmt = (x: number, digits = 0): string => {
  if (!Number.isFinite(x)) return '∞';
  const abs = Math.abs(x);
  const d = abs !== 0 && abs < 1 ? Math.max(digits, 2) : abs < 10 ? Math.max(digits, 1) : digits;
  return x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
};
const pct = (x: number) => `${fmt(x * 100, 0)} %`;
const usd = (x: number) =>
  `$${x.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

type Table = { head: string[]; rows: string[][]; align?: Array<'l' | 'r'> };

const markdownTable = ({ head, rows, align }: Table): string => {
  const a = align ?? head.map((_, i) => (i === 0 ? 'l' : 'r'));
  return [
    `| ${head.join(' | ')} |`,
    `| ${a.map((x) => (x === 'r' ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
};

const textTable = ({ head, rows, align }: Table): string => {
  const a = align ?? head.map((_, i) => (i === 0 ? 'l' : 'r'));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (a[i] === 'r' ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  return [line(head), ...rows.map(line)].map((l) => `  ${l.trimEnd()}`).join('\n');
};

const limitLine = (l: LimitAt) =>
  `${l.what}: ${fmt(l.demand, 1)} of ${fmt(l.capacity)} ${l.unit} (${pct(l.utilization)}), reached at ${fmt(l.hitsAtRate)} notifications/s`;

/** The limits worth a row: the first 15, or those reached within 100 × the rate; the rest are counted. */
const shownLimits = (report: CapacityReport): LimitAt[] =>
  report.limits.filter((l, i) => i < 15 || l.hitsAtRate <= 100 * report.model.rate);

export interface Section {
  title: string;
  tables: Array<{ caption: string; table: Table }>;
  notes: string[];
}

export const reportSections = (report: CapacityReport): Section[] => {
  const m = report.model;
  const n = m.perNotification;
  const total = (f: 'readUnits' | 'writeUnits') => Object.values(m.dynamo).reduce((s, u) => s + u[f], 0);
  const dynamoRows = Object.entries(m.dynamo)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([resource, u]) => [
      resource,
      fmt(u.writeUnits),
      fmt(u.readUnits),
      fmt(u.writeRequests + u.readRequests),
    ]);
  const hot = [...m.hotKeys].sort((a, b) => b.writeUnitsPerSecond - a.writeUnitsPerSecond);
  return [
    {
      title: 'DynamoDB',
      tables: [
        {
          caption: 'Units per second, per table and index (all functions)',
          table: {
            head: ['resource', 'WCU/s', 'RCU/s', 'requests/s'],
            rows: [...dynamoRows, ['total', fmt(total('writeUnits')), fmt(total('readUnits')), '']],
          },
        },
        {
          caption: 'Hottest partitions (one item or one index key: 1,000 WCU/s and 3,000 RCU/s each)',
          table: {
            head: ['key', 'what', 'WCU/s', 'RCU/s', 'of 1,000 WCU'],
            align: ['l', 'l', 'r', 'r', 'r'],
            rows: hot.map((h) => [
              `\`${h.key}\``,
              h.what,
              fmt(h.writeUnitsPerSecond, 1),
              fmt(h.readUnitsPerSecond, 1),
              pct(h.writeUnitsPerSecond / LIMITS.partitionWcu),
            ]),
          },
        },
      ],
      notes: [
        `Per notification: ${fmt(n.deliveries, 2)} deliveries, ${fmt(n.events, 2)} provider events, ${fmt(n.transitions, 2)} transitions; records per dispatcher batch ${fmt(m.recordsPerBatch, 1)}.`,
        'Ledger rows are keyed by the whole dedupe key (tenant, purpose, event, recipient, channel), so the ' +
          `largest tenant's traffic spreads over the table like everyone's; only its quota item (if configured) is one key.`,
      ],
    },
    {
      title: 'Lambda (Little’s law: concurrency = invocations/s × duration)',
      tables: [
        {
          caption: '',
          table: {
            head: ['function', 'invocations/s', 'duration ms', 'concurrency', 'memory MB'],
            rows: m.lambda.map((f) => [
              f.fn,
              fmt(f.invocationsPerSecond, 1),
              f.durationMs ? fmt(f.durationMs) : '—',
              f.concurrency ? fmt(f.concurrency, 1) : '—',
              String(f.memoryMb),
            ]),
          },
        },
      ],
      notes: [
        `SQS requests/s: ${fmt(m.sqs.publish, 1)} publish, ${fmt(m.sqs.receive, 1)} receive, ${fmt(m.sqs.delete, 1)} delete, ${fmt(m.sqs.changeVisibility, 1)} visibility changes, ${fmt(m.sqs.sendMessage, 2)} resumes. S3 archive PUTs/s: ${fmt(m.s3Puts, 2)}.`,
        `Reconcile: ${fmt(m.reconcile.rowsPerRun, 1)} rows per run, ${fmt(m.reconcile.pagesPerRun)} page(s) per run.`,
        `Providers: ${fmt(m.providers.emailsPerSecond, 1)} email requests/s; SMS parts/s ${
          Object.entries(m.providers.smsPartsPerSecond)
            .map(([c, x]) => `${c} ${fmt(x, 1)}`)
            .join(', ') || '—'
        }.`,
      ],
    },
    {
      title: `Dollars per month (30 days, on-demand list prices of ${PRICES.asOf}, ${PRICES.region}; provider fees apart)`,
      tables: [
        {
          caption: '',
          table: {
            head: ['item', 'per month'],
            rows: [
              ...Object.entries(m.costPerMonth.items)
                .filter(([, v]) => v >= 0.005)
                .sort((a, b) => b[1] - a[1])
                .map(([k, v]) => [k, usd(v)]),
              ['total (Sendproof on AWS)', usd(m.costPerMonth.total)],
              ['for reference: SES fees for these emails', usd(m.costPerMonth.sesFees)],
            ],
          },
        },
      ],
      notes: [],
    },
    {
      title: 'Limits, in the order the design reaches them',
      tables: [
        {
          caption: '',
          table: {
            head: ['limit', 'now', 'of', 'used', 'reached at (notifications/s)', 'what moves it'],
            align: ['l', 'r', 'r', 'r', 'r', 'l'],
            rows: shownLimits(report).map((l) => [
              l.what,
              `${fmt(l.demand, 1)}`,
              `${fmt(l.capacity)} ${l.unit}`,
              pct(l.utilization),
              fmt(l.hitsAtRate),
              l.moves,
            ]),
          },
        },
      ],
      notes: [
        ...(report.limits.length > shownLimits(report).length
          ? [
              `${report.limits.length - shownLimits(report).length} more limits (table quotas, partitions of smaller keys) are each reached only above ${fmt(
                Math.min(...report.limits.slice(shownLimits(report).length).map((l) => l.hitsAtRate)),
              )} notifications/s.`,
            ]
          : []),
        ...(report.firstLimit
          ? [
              `First limit: ${limitLine(report.firstLimit)}. Moves it: ${report.firstLimit.moves}.`,
              ...(report.firstLimitMoves.length
                ? [
                    `The same limit with other settings (the model run again): ${report.firstLimitMoves
                      .map((m) => `${m.setting} → ${fmt(m.hitsAtRate)}/s`)
                      .join('; ')}.`,
                  ]
                : []),
            ]
          : ['No limit is reached below 10⁸ notifications/s.']),
      ],
    },
  ];
};

export const renderText = (report: CapacityReport, mix: Mix, costs: CapacityCosts): string => {
  const head = [
    `Capacity model — ${fmt(report.model.rate)} notifications/s, mix "${mix.name}"`,
    `  costs: bench/results/latest.json (bench run ${costs.source.benchStartedAt}, ${costs.source.benchMode}; capacity section ${costs.source.capacityMeasuredAt} by \`${costs.source.capacityCommand}\`)`,
    `  deployment: evidence ${mix.deployment.evidence}, batch ${mix.deployment.lambda.batchSize}, recordConcurrency ${mix.deployment.lambda.recordConcurrency}, ${mix.deployment.attentionShards} attention shards, reconcile every ${mix.deployment.reconcile.periodSeconds} s (≤ ${mix.deployment.reconcile.maxPagesPerRun} pages of ${mix.deployment.reconcile.pageSize})`,
  ];
  const body = reportSections(report).map((s) =>
    [
      `\n${s.title}`,
      ...s.tables.map((t) => `${t.caption ? `  ${t.caption}\n` : ''}${textTable(t.table)}`),
      ...s.notes.map((x) => `  ${x}`),
    ].join('\n'),
  );
  return [...head, ...body].join('\n');
};

export const formatNumber = fmt;
export const formatUsd = usd;

export const renderMarkdownSections = (report: CapacityReport): string =>
  reportSections(report)
    .map((s) =>
      [
        `#### ${s.title}`,
        ...s.tables.map((t) => `${t.caption ? `${t.caption}:\n\n` : ''}${markdownTable(t.table)}`),
        ...s.notes,
      ].join('\n\n'),
    )
    .join('\n\n');

export const validationTable = (v: ValidationResult): Table => ({
  head: ['quantity', 'model', 'measured', 'deviation', ''],
  rows: v.rows.map((r) => [
    r.quantity,
    fmt(r.predicted, 1),
    fmt(r.measured, 1),
    Number.isFinite(r.deviation) ? pct(r.deviation) : '∞',
    !r.held ? `(under ${v.minimum}: shown, not held)` : r.ok ? 'ok' : `over ${pct(v.tolerance)}`,
  ]),
  align: ['l', 'r', 'r', 'r', 'l'],
});

export const renderValidationText = (v: ValidationResult): string =>
  [
    `Validation: ${v.notifications} notifications of mix "${v.mix}" at ${v.rate}/s (published in ${v.publishSeconds} s), ${v.reconcileRuns} reconcile runs every ${v.periodSeconds} s`,
    textTable(validationTable(v)),
    `${v.passed ? 'PASS' : 'FAIL'}: every quantity of at least ${v.minimum} within ${pct(v.tolerance)} of the model`,
  ].join('\n');

export const renderValidationMarkdown = (v: ValidationResult): string =>
  [
    `${v.notifications} notifications of the example mix at ${v.rate}/s (published in ${v.publishSeconds} s), ${v.reconcileRuns} reconcile runs every ${v.periodSeconds} s, measured ${v.measuredAt}; the model's prediction for the same run from the costs of ${v.costsSource.capacityMeasuredAt}. **${v.passed ? 'PASS' : 'FAIL'}**: every quantity of at least ${v.minimum} within ${pct(v.tolerance)}.`,
    markdownTable(validationTable(v)),
  ].join('\n\n');

/** The measured inputs the model composes (docs/capacity.md prints them beside its answers). */
export const renderCostsMarkdown = (costs: CapacityCosts): string => {
  const u = (
    use: Record<string, { writeUnits: number; readUnits: number }>,
    resource: string,
    f: 'writeUnits' | 'readUnits',
  ) => fmt(use[resource]?.[f] ?? 0, 2);
  const rows = SCENARIO_NAMES.map((name) => {
    const s = costs.scenarios[name];
    return [
      `${name}: ${s.description}`,
      fmt(s.deliveries, 2),
      u(s.dispatch, 'ledger', 'writeUnits'),
      u(s.dispatch, 'ledger', 'readUnits'),
      u(s.dispatch, 'ledger/attention', 'writeUnits'),
      u(s.reconcile, 'ledger', 'writeUnits'),
      u(s.reconcile, 'ledger', 'readUnits'),
      u(s.reconcile, 'suppression', 'writeUnits'),
      fmt(s.events, 2),
      fmt(s.transitions, 2),
    ];
  });
  const runUse = costs.perRun.use;
  const runRequests = Object.values(runUse).reduce((a, x) => a + x.readRequests + x.writeRequests, 0);
  return [
    markdownTable({
      head: [
        'per notification',
        'deliveries',
        'dispatch WCU',
        'dispatch RCU',
        'dispatch index WCU',
        'reconcile WCU',
        'reconcile RCU',
        'suppression WCU',
        'events',
        'transitions',
      ],
      align: ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
      rows,
    }),
    `The reconcile columns hold what the harness's reconcile run does per notification: reading its provider events from the pull feed (about 3 WCU and 1 RCU per event, as the protocol floor's pushed events cost), and the lookups and replays of the faulted kinds. Per queue batch, the gate-facts read: ${Object.values(
      costs.perBatch,
    )
      .reduce((a, x) => a + x.readRequests, 0)
      .toFixed(0)} requests.${
      costs.holdCheck
        ? ` Per dispatcher environment, transport and 5 s refresh, the hold gate: ${fmt(costs.holdCheck.readsPerRefresh, 1)} reads of ${fmt(costs.holdCheck.readUnitsPerRead, 1)} RCU.`
        : ''
    } Per reconcile run with nothing to do: ${fmt(
      Object.values(runUse).reduce((a, x) => a + x.readUnits, 0),
      1,
    )} RCU, ${fmt(
      Object.values(runUse).reduce((a, x) => a + x.writeUnits, 0),
      1,
    )} WCU in ${runRequests.toFixed(0)} requests (the census and the sweep query every state's ${'shards + 1'} index partitions). Pushed evidence: ${fmt(costs.evidencePush.writeUnitsPerEvent, 2)} WCU, ${fmt(costs.evidencePush.readUnitsPerEvent, 2)} RCU and ${fmt(costs.evidencePush.invocationsPerEvent, 2)} invocations per event; dispatch time ${fmt(costs.dispatchMs)} ms per record (one at a time); a waiting unknown row costs ${fmt(costs.reconcileReadUnitsPerRow, 2)} RCU per reconcile pass.`,
  ].join('\n\n');
};
