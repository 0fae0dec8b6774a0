import { describe, expect, it } from 'vitest';
import { costPerMillion, PRICES, unitsFor } from '../../../bench/cost.js';

const shape = {
  intakeBatchSize: 10,
  publishBatchSize: 10,
  dispatcherMemoryMb: 512,
  recordConcurrency: 5,
  transitionsPerArchiveObject: 1,
  transitionsPerArchiveInvocation: 100,
  transitionsPerNotification: 3,
  notificationsPerMonth: 1_000_000,
  reconcileRunsPerMonth: 8_760,
  stepFunctionsTransitionsPerRun: 4,
};

describe('cost model', () => {
  it('multiplies units by the dated price table: 3 WCU and one S3 object per transition is about $17 per million', () => {
    // Prepare: the path as it was before batching (one archive object per transition)
    const units = unitsFor(
      {
        writeUnits: 3,
        readUnits: 1,
        dispatchMs: 40,
        evidenceEvents: 0,
        evidenceWriteUnits: 0,
        evidenceReadUnits: 0,
        kmsRequests: 0,
      },
      shape,
    );
    // Act
    const cost = costPerMillion(units);
    // Assess
    expect(cost.perMillion.dynamoWriteUnit).toBeCloseTo(1.875, 6);
    expect(cost.perMillion.s3Put).toBeCloseTo(15, 6);
    expect(cost.perMillion.sqsRequest).toBeCloseTo(0.4 * 0.3, 6);
    // The fixed reconcile schedule (8,760 runs × 4 transitions a month) spread over a million: $0.876.
    expect(cost.perMillion.stepFunctionsTransition).toBeCloseTo(0.876, 6);
    const sum = Object.values(cost.perMillion).reduce((a, b) => a + b, 0);
    expect(cost.totalPerMillion).toBeCloseTo(sum, 9);
    expect(cost.totalPerMillion).toBeGreaterThan(17.5);
    expect(cost.totalPerMillion).toBeLessThan(18.5);
    expect(PRICES.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    for (const item of Object.values(PRICES.items)) expect(item.source).toMatch(/pricing|novu/);
  });

  it('batched archive objects remove the S3 share: 1 PUT per 100 transitions costs 1 % of one per transition', () => {
    // Prepare
    const path = {
      writeUnits: 2,
      readUnits: 0.1,
      dispatchMs: 40,
      evidenceEvents: 0,
      evidenceWriteUnits: 0,
      evidenceReadUnits: 0,
      kmsRequests: 0,
    };
    // Act
    const perRecord = costPerMillion(unitsFor(path, shape));
    const batched = costPerMillion(unitsFor(path, { ...shape, transitionsPerArchiveObject: 100 }));
    // Assess
    expect(batched.perMillion.s3Put).toBeCloseTo(perRecord.perMillion.s3Put / 100, 9);
    expect(batched.totalPerMillion).toBeLessThan(2.5);
  });
});
