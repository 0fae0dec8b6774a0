// Chart data shaping: pure functions from the API's rows to what a chart and its table show (unit-tested
// in test/unit/console/chartData.test.ts). The archive engines return counts as strings (DuckDB BIGINT,
// Athena's text results): every number goes through num().

export const num = (value) => (value === null || value === undefined || value === '' ? 0 : Number(value));

/**
 * Long rows ({ x, series, value }) to a wide shape: the x values in order, one value array per series
 * (0 where a series has no row), series in `order` first, then the rest by name.
 */
export const widen = (rows, { x, series, value }, order = []) => {
  const xs = [...new Set(rows.map((r) => String(r[x])))].sort();
  const names = [...new Set(rows.map((r) => String(r[series])))].sort(
    (a, b) =>
      (order.indexOf(a) + 1 || order.length + 1) - (order.indexOf(b) + 1 || order.length + 1) ||
      a.localeCompare(b),
  );
  const index = new Map(xs.map((v, i) => [v, i]));
  const out = names.map((name) => ({ name, values: xs.map(() => 0) }));
  for (const row of rows) {
    const s = out[names.indexOf(String(row[series]))];
    s.values[index.get(String(row[x]))] += num(row[value]);
  }
  return { xs, series: out };
};

/** Columns already wide ({ day, delivered, bounced, … }) summed over a key (e.g. every channel of a day). */
export const sumBy = (rows, key, columns) => {
  const xs = [...new Set(rows.map((r) => String(r[key])))].sort();
  return {
    xs,
    series: columns.map((name) => ({
      name,
      values: xs.map((x) =>
        rows.filter((r) => String(r[key]) === x).reduce((sum, r) => sum + num(r[name]), 0),
      ),
    })),
  };
};

/** The wide shape as table rows: one per x, one column per series, and the total. */
export const tableRows = ({ xs, series }) =>
  xs.map((x, i) => ({
    x,
    ...Object.fromEntries(series.map((s) => [s.name, s.values[i]])),
    total: series.reduce((sum, s) => sum + s.values[i], 0),
  }));

/** The latency histogram's buckets (le_ms upper bounds; -1 is the open last one), in order. */
export const BUCKETS = [100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, -1];
export const bucketLabel = (le) => (le === -1 ? '> 60 s' : le < 1000 ? `≤ ${le} ms` : `≤ ${le / 1000} s`);

/**
 * One stage's latency distribution ('accepted' or 'delivered'): one series per purpose · channel over
 * the buckets.
 */
export const distribution = (rows, stage) => {
  const mine = rows.filter((r) => r.stage === stage);
  const names = [...new Set(mine.map((r) => `${r.purpose} · ${r.channel}`))].sort();
  return {
    xs: BUCKETS.map(bucketLabel),
    series: names.map((name) => ({
      name,
      values: BUCKETS.map((le) =>
        mine
          .filter((r) => `${r.purpose} · ${r.channel}` === name && num(r.le_ms) === le)
          .reduce((sum, r) => sum + num(r.notifications), 0),
      ),
    })),
  };
};

/**
 * The latency table: per purpose and channel, the ledger's accepted rows now beside the archive's
 * accepted notifications in the window, and the archive's percentiles. `agrees` is false where the two
 * counts differ (rows older than the window, or the archive still catching up with the stream).
 */
export const latencyTable = (ledgerAccepted, percentiles) => {
  const keys = new Map();
  for (const r of ledgerAccepted)
    keys.set(`${r.purpose}\u0000${r.channel}`, { purpose: r.purpose, channel: r.channel });
  for (const r of percentiles)
    keys.set(`${r.purpose}\u0000${r.channel}`, { purpose: r.purpose, channel: r.channel });
  return [...keys.values()]
    .sort((a, b) => a.purpose.localeCompare(b.purpose) || a.channel.localeCompare(b.channel))
    .map(({ purpose, channel }) => {
      const ledger = ledgerAccepted.find((r) => r.purpose === purpose && r.channel === channel);
      const archive = percentiles.find((r) => r.purpose === purpose && r.channel === channel);
      const ledgerRows = ledger ? num(ledger.rows) : 0;
      const archiveRows = archive ? num(archive.accepted) : 0;
      return {
        purpose,
        channel,
        ledgerRows,
        archiveRows,
        agrees: ledgerRows === archiveRows,
        p50: archive ? num(archive.p50_ms) : null,
        p90: archive ? num(archive.p90_ms) : null,
        p99: archive ? num(archive.p99_ms) : null,
        max: archive ? num(archive.max_ms) : null,
      };
    });
};

/** Cumulative series for a stacked bar chart (drawn largest first, so each band shows its own part). */
export const cumulative = (series) => {
  const out = [];
  let running = series.length ? series[0].values.map(() => 0) : [];
  for (const s of series) {
    running = running.map((v, i) => v + s.values[i]);
    out.push({ name: s.name, values: running });
  }
  return out;
};
