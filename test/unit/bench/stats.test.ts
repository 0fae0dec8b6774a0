import { describe, expect, it } from 'vitest';
import { median, percentile, ratePerSecond, ratio, summarize, verdict } from '../../../bench/stats.js';
import { billedWriteUnits, emptyTotals, subtractTotals } from '../../../harness/CapacityMeter.js';

describe('bench stats: percentiles', () => {
  it('interpolates linearly between the closest ranks, whatever the input order', () => {
    // Prepare
    const values = [40, 10, 30, 20];
    // Act
    const p50 = percentile(values, 50);
    const p99 = percentile(values, 99);
    // Assess
    expect(p50).toBe(25);
    expect(p99).toBeCloseTo(39.7, 10);
    expect(percentile(values, 0)).toBe(10);
    expect(percentile(values, 100)).toBe(40);
  });

  it('the median of an odd sample is its middle value and the input is not reordered', () => {
    // Prepare
    const values = [9, 1, 5];
    // Act
    const m = median(values);
    // Assess
    expect(m).toBe(5);
    expect(values).toEqual([9, 1, 5]);
  });

  it('refuses an empty sample and a percentile outside 0..100', () => {
    // Act / Assess
    expect(() => percentile([], 50)).toThrow(RangeError);
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });

  it('summarizes count, extremes, p50, p99 and mean', () => {
    // Prepare
    const values = Array.from({ length: 101 }, (_, i) => i);
    // Act
    const summary = summarize(values);
    // Assess
    expect(summary).toEqual({ count: 101, min: 0, p50: 50, p99: 99, max: 100, mean: 50 });
  });
});

describe('bench stats: ratios and verdicts', () => {
  it('a ratio over zero is NaN, never Infinity, so a broken measurement cannot pass a >= target', () => {
    // Act
    const broken = ratio(120, 0);
    // Assess
    expect(broken).toBeNaN();
    expect(verdict(broken, { op: '>=', value: 0.8 })).toBe('MISS');
  });

  it('computes a rate per second from a count and elapsed milliseconds', () => {
    // Act / Assess
    expect(ratePerSecond(300, 1500)).toBe(200);
    expect(ratio(45, 60)).toBe(0.75);
  });

  it('each comparison passes on its boundary as written and misses just beyond it', () => {
    // Act / Assess
    expect(verdict(3, { op: '<=', value: 3 })).toBe('PASS');
    expect(verdict(3.01, { op: '<=', value: 3 })).toBe('MISS');
    expect(verdict(149.9, { op: '<', value: 150 })).toBe('PASS');
    expect(verdict(150, { op: '<', value: 150 })).toBe('MISS');
    expect(verdict(0.8, { op: '>=', value: 0.8 })).toBe('PASS');
    expect(verdict(0.79, { op: '>=', value: 0.8 })).toBe('MISS');
    expect(verdict(1, { op: '==', value: 1 })).toBe('PASS');
    expect(verdict(1.5, { op: '==', value: 1 })).toBe('MISS');
  });
});

describe('bench capacity totals', () => {
  it('bills transactional write units twice, as AWS does, while DynamoDB Local reports them once', () => {
    // Prepare
    const totals = { ...emptyTotals(), writeUnits: 6, transactWriteUnits: 4 };
    // Act
    const billed = billedWriteUnits(totals);
    // Assess
    expect(billed).toBe(10);
  });

  it('the difference of two snapshots is what was consumed between them', () => {
    // Prepare
    const before = { writeUnits: 3, transactWriteUnits: 0, writeRequests: 3, readUnits: 1, readRequests: 1 };
    const after = {
      writeUnits: 10,
      transactWriteUnits: 2,
      writeRequests: 7,
      readUnits: 1.5,
      readRequests: 2,
    };
    // Act
    const used = subtractTotals(after, before);
    // Assess
    expect(used).toEqual({
      writeUnits: 7,
      transactWriteUnits: 2,
      writeRequests: 4,
      readUnits: 0.5,
      readRequests: 1,
    });
  });
});
