/**
 * Retry delays for the dispatcher. Pure: no clock, no I/O, no Math.random — the caller passes `random`
 * so tests (and a deterministic replay) can fix it.
 *
 *   attempt 1 failed ──► wait U(0, min(cap, base·2⁰)) ──► attempt 2 failed ──► wait U(0, min(cap, base·2¹)) …
 *
 * Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter") spreads a burst of throttled
 * retries over the whole window instead of bunching them at its edge.
 */
export interface BackoffInput {
  /** How many provider attempts have been made so far (1 after the first failure). Values below 1 count as 1. */
  attempt: number;
  /** The ceiling of the first window, in ms. */
  baseMs: number;
  /** No exponential window is wider than this, in ms. */
  capMs: number;
  /**
   * The provider's Retry-After, in ms. The delay is never shorter than it, even when it exceeds `capMs`:
   * retrying before the provider said it would listen only burns an attempt of the purpose's budget.
   */
  retryAfterMs?: number;
  /** A source of numbers in [0, 1), e.g. Math.random. */
  random: () => number;
}

const nonNegative = (value: number, name: string): number => {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number >= 0`);
  return value;
};

/** The delay before the next attempt, in whole milliseconds. */
export const nextDelayMs = ({ attempt, baseMs, capMs, retryAfterMs, random }: BackoffInput): number => {
  nonNegative(baseMs, 'baseMs');
  nonNegative(capMs, 'capMs');
  const exponent = Math.max(0, Math.floor(Number.isFinite(attempt) ? attempt : 1) - 1);
  // 2 ** exponent overflows to Infinity for huge attempts; Math.min with the cap keeps the window finite.
  const window = Math.min(capMs, baseMs * 2 ** exponent);
  const draw = random();
  const unit = Number.isFinite(draw) ? Math.min(Math.max(draw, 0), 1) : 0;
  const jittered = Math.floor(window * unit);
  if (retryAfterMs === undefined || !Number.isFinite(retryAfterMs) || retryAfterMs <= 0) return jittered;
  return Math.max(jittered, Math.ceil(retryAfterMs));
};
