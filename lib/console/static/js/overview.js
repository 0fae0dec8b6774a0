// The overview: one tenant's figures, each saying its source and window. The ledger's figures are "now";
// the archive's cover the last N days through the named queries (DuckDB locally, Athena in AWS).
import { api } from './api.js';
import { distribution, latencyTable, num, sumBy, widen } from './chartData.js';
import { chartFigure } from './charts.js';
import { circuitsBody } from './circuits.js';
import { $, age, el, field, provenance, table } from './dom.js';
import { readUrl, writeUrl } from './url.js';

const STATE_ORDER = [
  'accepted',
  'resolved_accepted',
  'claimed',
  'scheduled',
  'dispatching',
  'retry_wait',
  'unknown',
  'quarantined',
  'stalled',
  'rejected',
  'resolved_rejected',
  'cancelled',
  'expired',
  'suppressed',
  'superseded',
  'blocked',
  'invalid',
];

const card = (id, title, panel, ...body) =>
  el(
    'section',
    { class: 'card', 'aria-labelledby': `${id}-h`, 'data-panel': id },
    el('h3', { id: `${id}-h`, text: title }),
    el('p', { class: 'provenance', 'data-testid': `${id}-source`, text: provenance(panel) }),
    ...body,
  );

const unavailable = (figure) =>
  figure.error ? el('p', { class: 'bad', text: `not available: ${figure.error}` }) : null;

const controls = (o) => {
  const tenant = el(
    'select',
    { id: 'o-tenant' },
    ...(o.tenants.length ? o.tenants : [o.tenant]).map((t) =>
      el('option', { value: t, text: t, selected: t === o.tenant }),
    ),
  );
  const bucket = el(
    'select',
    { id: 'o-bucket' },
    el('option', { value: 'day', text: 'per day', selected: o.panels.statesOverTime.bucket === 'day' }),
    el('option', { value: 'hour', text: 'per hour', selected: o.panels.statesOverTime.bucket === 'hour' }),
  );
  tenant.addEventListener('change', () => {
    writeUrl({ tenant: tenant.value });
    loadOverview();
  });
  bucket.addEventListener('change', () => {
    writeUrl({ bucket: bucket.value });
    loadOverview();
  });
  return el(
    'div',
    { class: 'filters' },
    field('Tenant', tenant),
    field('States over time', bucket),
    el('p', { class: 'muted', text: `Every figure below is tenant ${o.tenant}'s. As of ${o.now}.` }),
  );
};

const byStatePanel = (p) =>
  card(
    'by-state',
    'Rows by state',
    p,
    chartFigure({
      id: 'by-state-chart',
      title: `Rows by state (${p.total} rows)`,
      xs: p.rows.map((r) => r.state),
      series: [{ name: 'rows', values: p.rows.map((r) => num(r.rows)) }],
      xLabel: 'state',
      yLabel: 'rows',
    }),
    table(
      [
        { label: 'state', key: 'state' },
        { label: 'rows', key: 'rows', num: true },
        {
          label: 'oldest in state',
          render: (r) => (r.oldestAgeSeconds === null ? '' : age(r.oldestAgeSeconds)),
          num: true,
        },
      ],
      p.rows,
      {
        attrs: { 'data-testid': 'by-state' },
        caption: 'Rows by state, with the age of the oldest non-terminal row',
        empty: 'no rows yet',
      },
    ),
  );

const dlqPanel = (p) =>
  card(
    'dlq',
    'Dead-letter queue',
    p,
    p.error
      ? unavailable(p)
      : el(
          'p',
          { class: 'big', 'data-testid': 'dlq-depth' },
          el('strong', { text: String(p.depth) }),
          ' messages waiting',
        ),
  );

const statesPanel = (p) => {
  const wide = widen(p.rows ?? [], { x: 'bucket', series: 'state', value: 'transitions' }, STATE_ORDER);
  return card(
    'states-over-time',
    `Transitions into each state, per ${p.bucket}`,
    p,
    unavailable(p),
    p.rows
      ? chartFigure({
          id: 'states-chart',
          title: `Transitions per ${p.bucket}, stacked by the state entered`,
          note: "(the ledger's clock)",
          xs: wide.xs,
          series: wide.series,
          stacked: true,
          xLabel: p.bucket,
          yLabel: 'transitions',
        })
      : null,
  );
};

const latencyPanel = (p) => {
  const rows = latencyTable(p.ledgerAccepted.rows, p.percentiles.rows ?? []);
  const differs = rows.filter((r) => !r.agrees);
  const dist = p.distribution.rows ?? [];
  return card(
    'latency',
    'Latency per purpose and channel',
    p,
    unavailable(p.percentiles),
    table(
      [
        { label: 'purpose', key: 'purpose' },
        { label: 'channel', key: 'channel' },
        { label: 'accepted rows (ledger, now)', key: 'ledgerRows', num: true },
        { label: `accepted (archive, ${p.window.days} d)`, key: 'archiveRows', num: true },
        { label: 'intent → accepted p50 ms', key: 'p50', num: true },
        { label: 'p90 ms', key: 'p90', num: true },
        { label: 'p99 ms', key: 'p99', num: true },
        { label: 'max ms', key: 'max', num: true },
      ],
      rows,
      {
        attrs: { 'data-testid': 'latency' },
        caption: 'Accepted notifications and their latency, per purpose and channel',
        rowAttrs: (r) => ({ 'data-agrees': String(r.agrees) }),
        empty: `no accepted sends in the last ${p.window.days} days`,
      },
    ),
    differs.length
      ? el('p', {
          class: 'muted',
          'data-testid': 'latency-differs',
          text: `The ledger and the archive count differently for ${differs.map((r) => `${r.purpose} · ${r.channel}`).join(', ')}: the archive counts notifications claimed and accepted inside the window (and follows the ledger through the stream, seconds behind); the ledger counts the rows it holds now.`,
        })
      : null,
    unavailable(p.distribution),
    ...['accepted', 'delivered'].map((stage) => {
      const d = distribution(dist, stage);
      return chartFigure({
        id: `latency-${stage}-chart`,
        title: `Intent → ${stage}: notifications per latency bucket`,
        note:
          stage === 'delivered'
            ? "(claim on the ledger's clock, delivery on the provider's: a few ms either way are the clocks)"
            : "(both on the ledger's clock)",
        xs: d.series.length ? d.xs : [],
        series: d.series,
        kind: 'lines',
        xLabel: 'latency',
        yLabel: 'notifications',
      });
    }),
  );
};

const factsPanel = (p) => {
  const wide = sumBy(p.rows ?? [], 'day', ['delivered', 'bounced', 'complained', 'failed']);
  return card(
    'delivery-facts',
    'What providers reported, per day',
    p,
    unavailable(p),
    p.rows
      ? chartFigure({
          id: 'facts-chart',
          title: 'Delivery facts per day',
          note: "(the provider's clock and day)",
          xs: wide.xs,
          series: wide.series,
          stacked: true,
          xLabel: 'day',
          yLabel: 'facts',
        })
      : null,
  );
};

const humanPanel = (p) =>
  card(
    'human',
    'Decided by a human',
    p,
    unavailable(p),
    table(
      [
        { label: 'figure', key: 'figure' },
        { label: 'value', key: 'value', num: true },
        { label: 'source · window', key: 'where' },
      ],
      [
        { figure: 'operator decisions', value: p.manualDecisions, where: `archive · ${p.window.days} d` },
        {
          figure: 'notifications decided',
          value: p.notificationsDecided,
          where: `archive · ${p.window.days} d`,
        },
        {
          figure: 'duplicate acceptances (should be 0)',
          value: p.duplicateAcceptances,
          where: `archive · ${p.window.days} d`,
        },
        {
          figure: 'share of waiting rows settled by a human',
          value: p.manualShare.value === null ? null : `${Math.round(p.manualShare.value * 100)} %`,
          where: 'ledger · now',
        },
      ],
      {
        attrs: { 'data-testid': 'human' },
        caption: 'Figures about decisions, each with its source and window',
      },
    ),
  );

// A fraction as a percentage for the chart (null: nothing judged, drawn as no point).
const pct = (value, digits) =>
  value === null ? null : Math.round(value * 10 ** (digits + 2)) / 10 ** digits;

const sloPanel = (p) => {
  const rows = p.rows ?? [];
  const label = (r) =>
    `${r.purpose}${r.channel ? ` · ${r.channel}` : ''}${r.objectiveName ? ` · ${r.objectiveName}` : ''}`;
  // The chart draws what was judged; the table lists every objective, "nothing judged" included.
  const judged = rows.filter((r) => r.attainment !== null);
  const windows = [...new Set(rows.map((r) => `${r.window.from} ${r.window.to}`))];
  return card(
    'slo',
    'Objectives and error budget',
    { ...p, window: windows.length === 1 ? rows[0].window : 'per objective (see the table)' },
    unavailable(p),
    p.rows
      ? chartFigure({
          id: 'slo-chart',
          title: 'Attainment and objective per purpose (%)',
          xs: judged.map(label),
          series: [
            { name: 'attainment %', values: judged.map((r) => pct(r.attainment, 2)) },
            { name: 'objective %', values: judged.map((r) => pct(r.objective, 3)) },
          ],
          kind: 'lines',
          yLabel: '%',
          total: false,
        })
      : null,
    p.rows
      ? chartFigure({
          id: 'slo-budget-chart',
          title: 'Error budget left per purpose (%)',
          note: 'below 0: overspent',
          xs: judged.map(label),
          series: [{ name: 'budget left %', values: judged.map((r) => pct(r.budgetLeft ?? 0, 0)) }],
          yLabel: '%',
        })
      : null,
    p.rows
      ? table(
          [
            { label: 'purpose', key: 'purpose' },
            { label: 'channel', render: (r) => r.channel ?? 'all' },
            { label: 'objective of', key: 'objectiveName' },
            { label: 'objective', render: (r) => `${(r.objective * 100).toFixed(3)} %`, num: true },
            {
              label: 'attainment',
              render: (r) =>
                r.attainment === null ? 'nothing judged' : `${(r.attainment * 100).toFixed(2)} %`,
              num: true,
            },
            {
              label: 'budget left',
              render: (r) => (r.budgetLeft === null ? '—' : `${Math.round(r.budgetLeft * 100)} %`),
              num: true,
            },
            { label: 'good / eligible', render: (r) => `${r.good} / ${r.eligible}`, num: true },
            // Every window ends now (the as-of time); the card's source line gives it in full.
            { label: 'window', render: (r) => `${r.window.days} days` },
          ],
          rows,
          {
            attrs: { 'data-testid': 'slo' },
            caption: 'Objectives, attainment and error budget left',
            empty: 'no purpose is registered',
          },
        )
      : null,
  );
};

const circuitsPanel = (p) => card('circuits', 'Provider circuits', p, unavailable(p), circuitsBody(p));

const holdsPanel = (p) =>
  card(
    'holds',
    'Open transport holds',
    p,
    unavailable(p),
    p.rows
      ? table(
          [
            { label: 'kind', key: 'kind' },
            { label: 'name', key: 'name' },
            { label: 'channel', key: 'channel' },
            { label: 'since', key: 'since' },
            { label: 'until', key: 'until' },
            { label: 'reason', key: 'reason' },
          ],
          p.rows,
          {
            attrs: { 'data-testid': 'holds' },
            caption: 'Open transport holds',
            empty: 'nothing is held',
          },
        )
      : null,
  );

export const renderOverview = (o) => {
  const p = o.panels;
  $('overview-body').replaceChildren(
    controls(o),
    el(
      'div',
      { class: 'cards' },
      byStatePanel(p.byState),
      p.dlq ? dlqPanel(p.dlq) : null,
      p.circuits ? circuitsPanel(p.circuits) : null,
      p.holds ? holdsPanel(p.holds) : null,
      p.slo ? sloPanel(p.slo) : null,
      statesPanel(p.statesOverTime),
      factsPanel(p.deliveryFacts),
      latencyPanel(p.latency),
      humanPanel(p.human),
    ),
  );
};

export const loadOverview = async () => {
  const s = readUrl();
  const params = new URLSearchParams({ bucket: s.bucket });
  if (s.tenant) params.set('tenant', s.tenant);
  const o = await api(`/api/overview?${params}`);
  renderOverview(o);
  return o;
};
