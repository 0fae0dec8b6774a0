// Charts with uPlot (vendor/uPlot.iife.min.js, served from the console's own origin). uPlot draws on a
// canvas and sets sizes through the CSSOM (element.style), which the page's CSP allows; it needs neither
// inline styles nor eval. A canvas says nothing to a screen reader, so every chart is a <figure> whose
// caption names the figure, its source and its window, and whose numbers are a table beside it: in the
// accessibility tree always, and on screen with "Show numbers".
import { cumulative, tableRows } from './chartData.js';
import { el, table } from './dom.js';

const COLORS = {
  accepted: '#1a7f37',
  delivered: '#1a7f37',
  resolved_accepted: '#4caf50',
  claimed: '#8c959f',
  scheduled: '#a371f7',
  dispatching: '#0969da',
  retry_wait: '#bf8700',
  unknown: '#d1242f',
  quarantined: '#8250df',
  stalled: '#cf222e',
  rejected: '#6e7781',
  resolved_rejected: '#57606a',
  bounced: '#bc4c00',
  complained: '#cf222e',
  failed: '#57606a',
  cancelled: '#9a6700',
  expired: '#afb8c1',
  suppressed: '#953800',
  superseded: '#0550ae',
  blocked: '#24292f',
  invalid: '#82071e',
};
const PALETTE = ['#0969da', '#1a7f37', '#bf8700', '#8250df', '#cf222e', '#0550ae', '#bc4c00', '#57606a'];
export const colorOf = (name, i) => COLORS[name] ?? PALETTE[i % PALETTE.length];

const live = new Set();
let resizeTimer;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    for (const chart of live) {
      if (!chart.root.isConnected) live.delete(chart);
      else chart.setSize({ width: chart.root.parentElement.clientWidth, height: chart.height });
    }
  }, 150);
});

/**
 * A chart and its numbers. `kind`: 'bars' (one series or `stacked`) or 'lines' (a distribution over
 * ordered buckets). Returns the figure; the chart is drawn once the figure is in the page.
 */
export const chartFigure = ({
  id,
  title,
  note,
  xs,
  series,
  kind = 'bars',
  stacked = false,
  yLabel,
  xLabel,
  total = true,
}) => {
  const holder = el('div', { class: 'chart', 'aria-hidden': 'true', 'data-chart': id });
  const numbers = table(
    [
      { label: xLabel ?? '', key: 'x' },
      ...series.map((s) => ({ label: s.name, key: s.name, num: true })),
      // A total of unlike series (attainment and objective) means nothing: `total: false` leaves it out.
      ...(series.length > 1 && total ? [{ label: 'total', key: 'total', num: true }] : []),
    ],
    tableRows({ xs, series }),
    {
      caption: `${title}: the numbers`,
      attrs: { 'data-testid': `${id}-table` },
      empty: 'no data in this window',
    },
  );
  const numbersBox = el('div', { class: 'numbers sr-only', id: `${id}-numbers` }, numbers);
  // While only in the accessibility tree, the table's box is not a scroll stop of its own.
  if (numbers.classList.contains('table-wrap')) numbers.removeAttribute('tabindex');
  const toggle = el('button', {
    type: 'button',
    class: 'link show-numbers',
    'aria-controls': `${id}-numbers`,
    'aria-expanded': 'false',
    text: 'Show numbers',
  });
  toggle.addEventListener('click', () => {
    const open = numbersBox.classList.toggle('sr-only') === false;
    toggle.setAttribute('aria-expanded', String(open));
    toggle.textContent = open ? 'Hide numbers' : 'Show numbers';
  });
  const figure = el(
    'figure',
    { class: 'figure', 'data-testid': id },
    el(
      'figcaption',
      {},
      el('strong', { text: title }),
      note ? el('span', { class: 'muted', text: ` ${note}` }) : null,
    ),
    xs.length ? holder : el('p', { class: 'muted', text: 'no data in this window' }),
    xs.length ? toggle : null,
    numbersBox,
  );
  if (xs.length) requestAnimationFrame(() => draw(holder, { xs, series, kind, stacked, yLabel }));
  return figure;
};

const draw = (holder, { xs, series, kind, stacked, yLabel }) => {
  if (!holder.isConnected || typeof window.uPlot !== 'function') return;
  const uPlot = window.uPlot;
  const drawn = stacked ? cumulative(series).reverse() : series;
  const names = stacked ? [...series].reverse().map((s) => s.name) : series.map((s) => s.name);
  const values = drawn.flatMap((s) => s.values).filter((v) => v !== null);
  const max = Math.max(1, ...values);
  // Below 0 only when a value is (an overspent error budget).
  const min = Math.min(0, ...values);
  const every = Math.max(1, Math.ceil(xs.length / Math.max(2, Math.floor(holder.clientWidth / 70))));
  const height = 220;
  const opts = {
    width: Math.max(200, holder.clientWidth),
    height,
    scales: {
      x: { time: false, range: () => [-0.5, xs.length - 0.5] },
      y: { range: () => [min < 0 ? Math.floor(min * 1.1) : 0, Math.ceil(max * 1.1)] },
    },
    axes: [
      {
        splits: () => xs.map((_, i) => i),
        values: (_u, splits) => splits.map((i) => (i % every === 0 ? (xs[i] ?? '') : '')),
        gap: 4,
        size: 36,
      },
      { label: yLabel ?? '', size: 48 },
    ],
    legend: { show: true, live: false },
    cursor: { drag: { x: false, y: false } },
    series: [
      {},
      ...drawn.map((s, i) => {
        const color = colorOf(names[i], series.length - 1 - i);
        return kind === 'lines'
          ? { label: names[i], stroke: colorOf(s.name, i), width: 2, points: { show: true, size: 6 } }
          : {
              label: names[i],
              stroke: color,
              fill: color,
              paths: uPlot.paths.bars({ size: [0.7, 48] }),
              points: { show: false },
            };
      }),
    ],
  };
  if (kind === 'lines')
    opts.series = [
      {},
      ...series.map((s, i) => ({
        label: s.name,
        stroke: colorOf(s.name, i),
        width: 2,
        points: { show: true, size: 6 },
      })),
    ];
  const data = [xs.map((_, i) => i), ...(kind === 'lines' ? series : drawn).map((s) => s.values)];
  const chart = new uPlot(opts, data, holder);
  chart.height = height;
  live.add(chart);
};
