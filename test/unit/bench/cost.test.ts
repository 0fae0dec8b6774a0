import { describe, expect, it } from 'vitest';
import {
  costPerMillion,
  costScenarios,
  DEFAULT_SHAPE,
  evidenceEventsPerInvocation,
  MIX,
  PRICES,
  unitsFor,
} from '../../../bench/cost.js';

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
  evidenceBatchSize: 100,
  evidenceBatchingWindowSeconds: 5,
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

describe('evidence through a queue', () => {
  it('two events per notification read in batches: invocations per notification fall from 2.1 to under 0.3 at the default volume, and each event is one SQS send', () => {
    // Prepare: the deployment's defaults (10 M notifications a month, batches of 100 within 5 s)
    const full = {
      ...DEFAULT_SHAPE,
      transitionsPerArchiveObject: 300,
      transitionsPerArchiveInvocation: 300,
      transitionsPerNotification: 2,
    };
    const path = {
      writeUnits: 2,
      readUnits: 0,
      dispatchMs: 40,
      evidenceEvents: 2,
      evidenceWriteUnits: 0.5,
      evidenceReadUnits: 1,
      kmsRequests: 0,
    };
    // Act
    const units = unitsFor(path, full);
    const oneAtATime = unitsFor(path, { ...full, evidenceBatchSize: 1 });
    // Assess: 10 M × 2 events / 30 days ≈ 7.7 events/s, so a 5 s window gathers ≈ 38.6 events
    expect(evidenceEventsPerInvocation(2, full)).toBeCloseTo((10_000_000 * 2 * 5) / (30 * 86_400), 6);
    expect(units.lambdaRequest).toBeLessThan(0.3);
    expect(oneAtATime.lambdaRequest).toBeGreaterThan(2.1);
    expect(units.sqsRequest - oneAtATime.sqsRequest).toBeCloseTo(2 * (2 / 38.58 - 2), 1);
    // A quiet deployment never batches below one event per invocation.
    expect(evidenceEventsPerInvocation(2, { ...full, notificationsPerMonth: 1_000 })).toBe(1);
    expect(units.dynamoWriteUnit).toBe(3);
  });
});

describe('cost scenarios', () => {
  it('the realistic mix adds the measured extras of retries, unknowns and bounces to the happy path, weighted', () => {
    // Prepare: the happy path at the floor, and the write-unit phase's rows for the other scenarios
    const input = {
      floor: {
        writeUnitsPerNotification: 2,
        readUnitsPerNotification: 0.1,
        transitionsPerNotification: 2,
        evidence: { eventsPerNotification: 2, writeUnitsPerEvent: 2, readUnitsPerEvent: 1 },
      },
      ledgerRows: [
        { scenario: 'happy', notifications: 10, perNotification: 2, readUnits: 10, historyEntries: 2 },
        {
          scenario: 'retry_after_429',
          notifications: 10,
          perNotification: 6,
          readUnits: 20,
          historyEntries: 4,
        },
        {
          scenario: 'unknown_reconciled',
          notifications: 10,
          perNotification: 5,
          readUnits: 30,
          historyEntries: 3,
        },
      ],
      dispatchMs: 40,
      transitionsPerArchiveObject: 100,
    };
    // Act
    const { happy, mix } = costScenarios(input);
    // Assess: 2 WCU + 2 events × 2 WCU; the mix adds 0.05 × 4 + 0.01 × 3 + 0.01 × 1 (the suppression put)
    expect(happy.units.dynamoWriteUnit).toBeCloseTo(6, 9);
    expect(mix.units.dynamoWriteUnit).toBeCloseTo(6 + MIX.retry * 4 + MIX.unknown * 3 + MIX.bounce * 1, 9);
    expect(mix.units.sqsRequest).toBeGreaterThan(happy.units.sqsRequest);
    expect(mix.totalPerMillion).toBeGreaterThan(happy.totalPerMillion);
    expect(happy.perMillion.s3Put).toBeCloseTo((2 / 100) * 0.005 * 1e3, 9);
  });
});
