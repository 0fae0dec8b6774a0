import { describe, expect, it } from 'vitest';
import { nextDelayMs } from '../../lib/domain/backoff.js';

const fixed = (value: number) => () => value;

describe('nextDelayMs', () => {
  it('draws the first delay from a window of baseMs', () => {
    // Prepare
    const input = { attempt: 1, baseMs: 200, capMs: 10_000 };

    // Act
    const top = nextDelayMs({ ...input, random: fixed(0.999) });
    const middle = nextDelayMs({ ...input, random: fixed(0.5) });

    // Assess
    expect(top).toBe(199);
    expect(middle).toBe(100);
  });

  it('doubles the window with every attempt (full jitter scales the whole window)', () => {
    // Prepare
    const base = { baseMs: 100, capMs: 1_000_000, random: fixed(0.5) };

    // Act
    const delays = [1, 2, 3, 4, 5].map((attempt) => nextDelayMs({ ...base, attempt }));

    // Assess
    expect(delays).toEqual([50, 100, 200, 400, 800]);
  });

  it('can return zero: full jitter spreads retries over the whole window', () => {
    // Act
    const delay = nextDelayMs({ attempt: 3, baseMs: 100, capMs: 10_000, random: fixed(0) });

    // Assess
    expect(delay).toBe(0);
  });

  it('never lets the window grow past capMs, even for absurd attempt counts', () => {
    // Act
    const late = nextDelayMs({ attempt: 40, baseMs: 100, capMs: 5_000, random: fixed(0.999) });
    const overflow = nextDelayMs({ attempt: 5_000, baseMs: 100, capMs: 5_000, random: fixed(0.5) });

    // Assess
    expect(late).toBe(4_995);
    expect(overflow).toBe(2_500);
  });

  it('never waits less than Retry-After', () => {
    // Act
    const delay = nextDelayMs({
      attempt: 1,
      baseMs: 100,
      capMs: 10_000,
      retryAfterMs: 3_000,
      random: fixed(0.9),
    });

    // Assess
    expect(delay).toBe(3_000);
  });

  it('keeps the jittered delay when it is already longer than Retry-After', () => {
    // Act
    const delay = nextDelayMs({
      attempt: 6,
      baseMs: 1_000,
      capMs: 60_000,
      retryAfterMs: 1_000,
      random: fixed(0.5),
    });

    // Assess
    expect(delay).toBe(16_000);
  });

  it('honours a Retry-After longer than the cap: retrying before it only wastes an attempt', () => {
    // Act
    const delay = nextDelayMs({
      attempt: 2,
      baseMs: 100,
      capMs: 1_000,
      retryAfterMs: 30_000,
      random: fixed(0.5),
    });

    // Assess
    expect(delay).toBe(30_000);
  });

  it('treats an attempt below 1 as the first attempt and clamps a misbehaving random source', () => {
    // Act
    const zeroth = nextDelayMs({ attempt: 0, baseMs: 100, capMs: 1_000, random: fixed(0.5) });
    const tooBig = nextDelayMs({ attempt: 1, baseMs: 100, capMs: 1_000, random: fixed(7) });
    const notANumber = nextDelayMs({ attempt: 1, baseMs: 100, capMs: 1_000, random: fixed(Number.NaN) });

    // Assess
    expect(zeroth).toBe(50);
    expect(tooBig).toBe(100);
    expect(notANumber).toBe(0);
  });

  it('refuses a negative or non-finite base or cap', () => {
    // Act / Assess
    expect(() => nextDelayMs({ attempt: 1, baseMs: -1, capMs: 10, random: fixed(0.5) })).toThrow(RangeError);
    expect(() =>
      nextDelayMs({ attempt: 1, baseMs: 1, capMs: Number.POSITIVE_INFINITY, random: fixed(0.5) }),
    ).toThrow(/capMs/);
  });
});
