/**
 * Pure arithmetic for the benchmark: percentiles, ratios and verdicts. No clock, no I/O, so the smoke
 * tests in test/unit/bench can pin every number.
 */

/**
 * The p-th percentile (0..100) by linear interpolation between closest ranks (the "R-7" definition that
 * spreadsheets and NumPy use by default). Throws on an empty sample: a percentile of nothing is a bug in
 * the run, not a number to print.
 */
export const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) throw new RangeError('percentile of an empty sample');
  if (!Number.isFinite(p) || p < 0 || p > 100) throw new RangeError('p must be between 0 and 100');
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const lower = sorted[low]!;
  const upper = sorted[high]!;
  return lower + (upper - lower) * (rank - low);
};

export const median = (values: readonly number[]): number => percentile(values, 50);

export interface Summary {
  count: number;
  min: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

export const summarize = (values: readonly number[]): Summary => ({
  count: values.length,
  min: percentile(values, 0),
  p50: percentile(values, 50),
  p99: percentile(values, 99),
  max: percentile(values, 100),
  mean: values.reduce((sum, v) => sum + v, 0) / values.length,
});

/**
 * numerator / denominator, or NaN when the denominator is zero or not a number. NaN (serialised as null)
 * makes a broken measurement visible and fails every verdict, where Infinity would pass a `>=` target.
 */
export const ratio = (numerator: number, denominator: number): number =>
  Number.isFinite(numerator) && Number.isFinite(denominator) && denominator !== 0
    ? numerator / denominator
    : Number.NaN;

/** Events per second for `count` events in `elapsedMs`. */
export const ratePerSecond = (count: number, elapsedMs: number): number => ratio(count * 1000, elapsedMs);

export type Comparison = '<=' | '<' | '>=' | '==';

export interface Goal {
  op: Comparison;
  value: number;
}

export type Verdict = 'PASS' | 'MISS';

/** PASS when `measured op goal.value` holds; a NaN measurement is always a MISS. */
export const verdict = (measured: number, goal: Goal): Verdict => {
  if (!Number.isFinite(measured)) return 'MISS';
  switch (goal.op) {
    case '<=':
      return measured <= goal.value ? 'PASS' : 'MISS';
    case '<':
      return measured < goal.value ? 'PASS' : 'MISS';
    case '>=':
      return measured >= goal.value ? 'PASS' : 'MISS';
    case '==':
      return measured === goal.value ? 'PASS' : 'MISS';
  }
};

/** Rounds for display and for the JSON (3 significant decimals is more than a noisy machine can resolve). */
export const round = (value: number, decimals = 3): number => {
  if (!Number.isFinite(value)) return value;
  const scale = 10 ** decimals;
  return Math.round(value * scale) / scale;
};
