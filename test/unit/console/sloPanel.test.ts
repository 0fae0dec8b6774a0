import { describe, expect, it } from 'vitest';
import { sloFigures } from '../../../lib/console/sloPanel.js';
import { objectiveAttainment, type PurposeAttainment } from '../../../lib/slo/readModel.js';

const window = {
  fromMs: Date.parse('2026-11-03T00:00:00Z'),
  toMs: Date.parse('2026-12-01T00:00:00Z'),
  days: 28,
};
const slo = {
  accepted: { withinSeconds: 120, target: 0.99 },
  duplicates: { atMostOneIn: 100_000 },
  windowDays: 28,
};
const channel = (name: string, good: number, eligible: number) => ({
  channel: name,
  accepted: objectiveAttainment(0.99, eligible, good),
  duplicates: objectiveAttainment(0.99999, good, good),
  deliveryUnreported: 0,
  acceptP99Ms: 10,
});

describe('the SLO panel rows', () => {
  it('maps each objective of a purpose to a row, with each channel only when there are several', () => {
    // Arrange: a purpose with no delivery objective, measured on email (99 of 100) and sms (50 of 50)
    const report: PurposeAttainment = {
      purpose: 'receipt',
      slo,
      window,
      total: {
        accepted: objectiveAttainment(0.99, 150, 149),
        duplicates: objectiveAttainment(0.99999, 149, 149),
        deliveryUnreported: 0,
      },
      channels: [channel('email', 99, 100), channel('sms', 50, 50)],
    };
    const single: PurposeAttainment = { ...report, purpose: 'one', channels: [channel('email', 1, 1)] };

    // Act
    const rows = sloFigures([report, single]);

    // Assess
    expect(rows.map((r) => [r.purpose, r.channel ?? 'all', r.objectiveName])).toEqual([
      ['receipt', 'all', 'accepted'],
      ['receipt', 'all', 'duplicates'],
      ['receipt', 'email', 'accepted'],
      ['receipt', 'email', 'duplicates'],
      ['receipt', 'sms', 'accepted'],
      ['receipt', 'sms', 'duplicates'],
      ['one', 'all', 'accepted'],
      ['one', 'all', 'duplicates'],
    ]);
    expect(rows[0]).toEqual({
      purpose: 'receipt',
      objectiveName: 'accepted',
      objective: 0.99,
      attainment: 149 / 150,
      // budget 1.5 messages, 1 missed: a third left
      budgetLeft: expect.closeTo(1 / 3, 9),
      good: 149,
      eligible: 150,
      window: { from: '2026-11-03T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z', days: 28 },
    });
    expect(rows[2]).toMatchObject({ channel: 'email', good: 99, eligible: 100 });
    expect(rows[2]!.budgetLeft).toBeCloseTo(0, 9);
  });

  it('says nothing was judged instead of a number', () => {
    const empty = objectiveAttainment(0.99, 0, 0);
    const [row] = sloFigures([
      {
        purpose: 'idle',
        slo,
        window,
        total: { accepted: empty, duplicates: empty, deliveryUnreported: 0 },
        channels: [],
      },
    ]);
    expect(row).toMatchObject({ attainment: null, budgetLeft: null, good: 0, eligible: 0 });
  });
});
