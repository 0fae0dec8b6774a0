import { describe, expect, it } from 'vitest';

// The page's pure modules (lib/console/static/js/url.js and chartData.js), loaded as the browser loads
// them: plain ES modules, no build step. Their DOM-touching siblings are exercised in the Chromium test.
const load = async (name: string) =>
  // biome-ignore lint/suspicious/noExplicitAny: plain JS modules have no types
  (await import(new URL(`../../../lib/console/static/js/${name}.js`, import.meta.url).href)) as any;

describe("the page's URL state", () => {
  it('round-trips a shared link: only what differs from the defaults is written, unknown keys are ignored', async () => {
    const { parseState, formatState, DEFAULTS } = await load('url');
    const link = formatState({
      ...DEFAULTS,
      view: 'find',
      'f.field': 'recipientRef',
      'f.value': 'player 73',
      'f.page': '2',
    });
    expect(link).toBe('?view=find&f.field=recipientRef&f.value=player+73&f.page=2');
    expect(parseState(`${link}&evil=<x>`)).toEqual({
      ...DEFAULTS,
      view: 'find',
      'f.field': 'recipientRef',
      'f.value': 'player 73',
      'f.page': '2',
    });
    expect(parseState('?view=nope').view).toBe('overview');
    expect(formatState(DEFAULTS)).toBe('');
  });

  it('flips the direction on the sorted column; a new column starts ascending, ages oldest first', async () => {
    const { nextSort } = await load('url');
    expect(nextSort('eventId', 'asc', 'eventId')).toEqual({ sort: 'eventId', dir: 'desc' });
    expect(nextSort('eventId', 'desc', 'tenant')).toEqual({ sort: 'tenant', dir: 'asc' });
    expect(nextSort('tenant', 'asc', 'age')).toEqual({ sort: 'age', dir: 'desc' });
  });
});

describe("the charts' data", () => {
  it('widens long rows into series over ordered x values, counts from strings (DuckDB BIGINT), 0 where absent', async () => {
    const { widen, tableRows, cumulative } = await load('chartData');
    const rows = [
      { bucket: '2026-12-01', state: 'claimed', transitions: '3' },
      { bucket: '2026-12-02', state: 'accepted', transitions: '2' },
      { bucket: '2026-12-01', state: 'accepted', transitions: 1 },
    ];
    const wide = widen(rows, { x: 'bucket', series: 'state', value: 'transitions' }, ['accepted', 'claimed']);
    expect(wide).toEqual({
      xs: ['2026-12-01', '2026-12-02'],
      series: [
        { name: 'accepted', values: [1, 2] },
        { name: 'claimed', values: [3, 0] },
      ],
    });
    expect(tableRows(wide)).toEqual([
      { x: '2026-12-01', accepted: 1, claimed: 3, total: 4 },
      { x: '2026-12-02', accepted: 2, claimed: 0, total: 2 },
    ]);
    expect(cumulative(wide.series).map((s: { values: number[] }) => s.values)).toEqual([
      [1, 2],
      [4, 2],
    ]);
  });

  it('sums wide daily rows over channels, and shapes one stage of the latency histogram per purpose · channel', async () => {
    const { sumBy, distribution, BUCKETS } = await load('chartData');
    expect(
      sumBy(
        [
          { day: 'd1', channel: 'email', delivered: '2', bounced: '1' },
          { day: 'd1', channel: 'sms', delivered: '1', bounced: '0' },
        ],
        'day',
        ['delivered', 'bounced'],
      ),
    ).toEqual({
      xs: ['d1'],
      series: [
        { name: 'delivered', values: [3] },
        { name: 'bounced', values: [1] },
      ],
    });
    const d = distribution(
      [
        { purpose: 'receipt', channel: 'email', stage: 'accepted', le_ms: '250', notifications: '2' },
        { purpose: 'receipt', channel: 'email', stage: 'accepted', le_ms: '-1', notifications: '1' },
        { purpose: 'receipt', channel: 'email', stage: 'delivered', le_ms: '250', notifications: '9' },
      ],
      'accepted',
    );
    expect(d.xs).toHaveLength(BUCKETS.length);
    expect(d.xs[1]).toBe('≤ 250 ms');
    expect(d.xs.at(-1)).toBe('> 60 s');
    expect(d.series).toEqual([{ name: 'receipt · email', values: [0, 2, 0, 0, 0, 0, 0, 0, 0, 1] }]);
  });

  it("puts the ledger's accepted rows beside the archive's count, and flags where they differ", async () => {
    const { latencyTable } = await load('chartData');
    const rows = latencyTable(
      [
        { purpose: 'password-reset', channel: 'email', rows: 2 },
        { purpose: 'receipt', channel: 'email', rows: 3 },
      ],
      [
        {
          purpose: 'password-reset',
          channel: 'email',
          accepted: '2',
          p50_ms: '40',
          p90_ms: '60',
          p99_ms: '90',
          max_ms: '95',
        },
      ],
    );
    expect(rows).toEqual([
      {
        purpose: 'password-reset',
        channel: 'email',
        ledgerRows: 2,
        archiveRows: 2,
        agrees: true,
        p50: 40,
        p90: 60,
        p99: 90,
        max: 95,
      },
      {
        purpose: 'receipt',
        channel: 'email',
        ledgerRows: 3,
        archiveRows: 0,
        agrees: false,
        p50: null,
        p90: null,
        p99: null,
        max: null,
      },
    ]);
  });
});

describe("the page's files", () => {
  it('serves every module of static/js/ and nothing else, under the same strict CSP', async () => {
    const { readdirSync } = await import('node:fs');
    const { PAGE_MODULES, STATIC_DIR, STATIC_FILES, contentSecurityPolicy } = await import(
      '../../../lib/console/staticFiles.js'
    );
    const onDisk = readdirSync(`${STATIC_DIR}/js`)
      .filter((f) => f.endsWith('.js'))
      .map((f) => f.replace(/\.js$/, ''))
      .sort();
    expect([...PAGE_MODULES].sort()).toEqual(onDisk);
    expect(Object.keys(STATIC_FILES).filter((p) => p.startsWith('/vendor/'))).toEqual([
      '/vendor/uPlot.iife.min.js',
      '/vendor/uPlot.min.css',
    ]);
    expect(contentSecurityPolicy()).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
  });

  it('uses no innerHTML, eval, inline script or inline style: every value reaches the page as text', async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const { STATIC_DIR } = await import('../../../lib/console/staticFiles.js');
    const sources = ['console.js', ...readdirSync(`${STATIC_DIR}/js`).map((f) => `js/${f}`)].map((f) => [
      f,
      // comments may name what the code never does
      readFileSync(`${STATIC_DIR}/${f}`, 'utf8').replace(/^\s*\/\/.*$/gm, ''),
    ]);
    for (const [file, source] of sources) {
      expect(source, file).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/,
      );
      expect(source, file).not.toMatch(/setAttribute\(['"]style|\.style\./);
    }
    const html = readFileSync(`${STATIC_DIR}/index.html`, 'utf8');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toMatch(/\sstyle=|<style/);
  });
});

describe("the circuits panel's badge", () => {
  it('says the state in words and a symbol: open until HH:MM:SS, half-open probing, closed', async () => {
    const { circuitBadge, clockTime } = await load('circuits');
    expect(clockTime('2026-12-02T12:03:04.000Z')).toBe('12:03:04 UTC');
    expect(circuitBadge({ state: 'open', openUntil: '2026-12-02T12:03:04.000Z', probeDue: false })).toBe(
      '✕ open until 12:03:04 UTC',
    );
    expect(circuitBadge({ state: 'open', openUntil: '2026-12-02T12:03:04.000Z', probeDue: true })).toBe(
      '✕ open: probe due',
    );
    expect(
      circuitBadge({ state: 'half_open', probeUntil: '2026-12-02T12:00:30.000Z', probeDue: false }),
    ).toBe('◐ half-open: probing until 12:00:30 UTC');
    expect(circuitBadge({ state: 'closed', probeDue: false })).toBe('✓ closed');
  });
});
