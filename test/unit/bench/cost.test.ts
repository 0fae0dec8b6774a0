import { describe, expect, it } from 'vitest';
import {
  BYTES_PER_GB,
  billedGbSeconds,
  billedReadUnits,
  estimatedLambdaMs,
  logEventBytes,
  platformLogBytesPerInvocation,
  recordsPerInvocation,
  SQS_IDLE_RECEIVES_PER_QUEUE_MONTH,
  sampledTracesPerSecond,
  sqsEventSourceRequests,
  sqsRequestsForMessages,
  vcpuShare,
} from '../../../bench/billing.js';
import {
  costPerMillion,
  type DeploymentShape,
  happyUnits,
  MIX,
  mixExtras,
  mixUnits,
} from '../../../bench/cost.js';
import {
  COST_FUNCTIONS,
  type CostFunction,
  type CostMeasurement,
  emptyFunction,
  type FunctionMeasurement,
  maskedLine,
} from '../../../bench/costBench.js';
import { COST_ITEMS, PRICES } from '../../../bench/prices.js';

// Each rule below has a case the previous model (bench/cost.ts before the cost phase) got wrong: it took
// DynamoDB Local's reported read units (0 for a missing item), billed an evidence batch's receive and
// delete as 2 requests whatever its size, priced evidence time at a fixed 256 MB and 50 ms per event,
// and counted no log bytes, no traces and no outcome events.

const fn = (memoryMb: number, over: Partial<FunctionMeasurement> = {}): FunctionMeasurement => ({
  ...emptyFunction(memoryMb),
  ...over,
});

/** A measured run of 10 notifications: one dispatch batch, one evidence batch of their 20 events. */
const measurement = (
  over: Partial<Record<CostFunction, Partial<FunctionMeasurement>>> = {},
): CostMeasurement => ({
  measuredAt: '2026-12-02T00:00:00.000Z',
  notifications: 10,
  batches: { dispatch: 10, evidence: 20, outcomes: 12, archive: 30, reconcile: 1 },
  functions: Object.fromEntries(COST_FUNCTIONS.map((f) => [f, fn(512, over[f])])) as Record<
    CostFunction,
    FunctionMeasurement
  >,
  sqs: { intakeBodyBytes: Array(10).fill(1_000), evidenceBodyBytes: Array(20).fill(2_000) },
  evidenceEvents: 20,
  streamRecords: 30,
  eventBridge: { putEventsCalls: 3, eventBytes: Array(20).fill(700) },
  s3: { puts: 1 },
  reconcileRuns: 1,
  metricSeries: [],
  logLevel: 'INFO',
});

const shape: DeploymentShape = {
  notificationsPerMonth: 10_000_000,
  publishBatchSize: 10,
  polledQueues: 2,
  reconcileRunsPerMonth: 8_640,
  stepFunctionsTransitionsPerRun: 4,
  tracing: false,
};

describe('DynamoDB reads as AWS bills them', () => {
  it('a strongly consistent read of a missing item costs 1 read unit, an eventually consistent one 0.5, though DynamoDB Local reports 0', () => {
    // Prepare: what the proxy logs for a GetItem that found nothing
    const miss = { operation: 'GetItem', keys: 1, found: 0, reportedUnits: 0 };
    // Act / Assess
    expect(billedReadUnits({ ...miss, consistent: true })).toBe(1);
    expect(billedReadUnits({ ...miss, consistent: false })).toBe(0.5);
    expect(billedReadUnits({ ...miss, operation: 'TransactGetItems', consistent: true })).toBe(2);
    // A found item is billed as reported (its size rounded up to 4 KB).
    expect(
      billedReadUnits({ operation: 'GetItem', consistent: true, keys: 1, found: 1, reportedUnits: 1 }),
    ).toBe(1);
  });

  it("a batch's gate-facts read of 20 keys of which none exists costs 20 units, and an empty Query the minimum", () => {
    // Prepare: the dispatcher's BatchGetItem of a batch of 10 (suppression + fallback pointer each)
    const batch = { operation: 'BatchGetItem', consistent: true, keys: 20, found: 0, reportedUnits: 0 };
    // Act / Assess
    expect(billedReadUnits(batch)).toBe(20);
    expect(billedReadUnits({ ...batch, found: 2, reportedUnits: 2 })).toBe(20);
    expect(
      billedReadUnits({ operation: 'Query', consistent: false, keys: 0, found: 0, reportedUnits: 0 }),
    ).toBe(0.5);
  });

  it('the cost model bills the read units the rule gives, not the ones the emulator reported', () => {
    // Prepare: 10 notifications whose 20 gate reads found nothing
    const m = measurement({
      dispatch: {
        dynamo: {
          writeUnits: 20,
          writeRequests: 20,
          readRequests: 1,
          readUnitsReported: 0,
          readUnitsBilled: 20,
        },
      },
    });
    // Act
    const units = happyUnits(m, shape);
    // Assess: 2 read units per notification (the old model counted 0)
    expect(units.dynamoReadUnit).toBe(2);
    expect(units.dynamoWriteUnit).toBe(2);
  });
});

describe('SQS requests as AWS bills them', () => {
  it('an event source batch of 39 messages takes 4 receives and 4 deletes (10 messages a call), not one of each', () => {
    // Act / Assess
    expect(sqsEventSourceRequests(Array(39).fill(2_000))).toBe(8);
    expect(sqsEventSourceRequests(Array(10).fill(1_000))).toBe(2);
  });

  it('a call is billed per 64 KB chunk of its payload: 10 messages of 10 KB are 2 requests', () => {
    // Act / Assess
    expect(sqsRequestsForMessages(Array(10).fill(10 * 1024))).toBe(2);
    expect(sqsRequestsForMessages(Array(11).fill(1_000))).toBe(2);
  });

  it('the model counts the publish, both event sources, one send per SES event and the idle polls', () => {
    // Prepare
    const m = measurement();
    // Act
    const units = happyUnits(m, shape);
    // Assess: publish 1 + intake 2 + 20 sends + evidence batch of 20 (2 receives, 2 deletes) over 10
    // notifications, plus two idle queues' polls spread over the month
    const idle = (2 * SQS_IDLE_RECEIVES_PER_QUEUE_MONTH) / shape.notificationsPerMonth;
    expect(units.sqsRequest).toBeCloseTo((1 + 2 + 20 + 4) / 10 + idle, 9);
  });
});

describe('Lambda duration as AWS bills it', () => {
  it('GB-seconds are the duration rounded up to 1 ms times the configured memory', () => {
    // Act / Assess
    expect(billedGbSeconds(100.2, 512)).toBeCloseTo(0.101 * 0.5, 12);
    expect(billedGbSeconds(100.2, 1024)).toBeCloseTo(0.101, 12);
  });

  it("a local sample's CPU time is stretched by the memory's vCPU share; the awaited I/O is kept", () => {
    // Act / Assess: 512 MB is 512/1769 of a vCPU
    expect(vcpuShare(512)).toBeCloseTo(512 / 1769, 12);
    expect(vcpuShare(4096)).toBe(1);
    expect(estimatedLambdaMs({ wallMs: 100, cpuMs: 40 }, 512)).toBeCloseTo(40 / (512 / 1769) + 60, 9);
  });

  it("the model bills each function's invocations at that function's memory", () => {
    // Prepare: the same evidence invocation at 512 MB and at 1024 MB
    const sample = { records: 20, wallMs: 100, cpuMs: 20 };
    const at = (memoryMb: number) => {
      const m = measurement({ evidence: { invocations: 1, records: 20, samples: [sample] } });
      m.functions.evidence.memoryMb = memoryMb;
      return happyUnits(m, shape).lambdaGbSecond;
    };
    // Act
    const small = at(512);
    const large = at(1024);
    // Assess: (20 / (512/1769) + 80) ms ≈ 150 ms at 0.5 GB over 10 notifications; more memory, less
    // stretched CPU but twice the GB per second
    expect(small).toBeCloseTo(billedGbSeconds(estimatedLambdaMs(sample, 512), 512) / 10, 12);
    expect(large).toBeCloseTo(billedGbSeconds(estimatedLambdaMs(sample, 1024), 1024) / 10, 12);
    expect(large).toBeGreaterThan(small);
  });
});

describe('CloudWatch Logs, X-Ray, outcome events', () => {
  it('a log event is billed as its UTF-8 bytes plus 26, and every invocation adds its platform records', () => {
    // Act / Assess
    expect(logEventBytes('x'.repeat(100))).toBe(126);
    expect(logEventBytes('é')).toBe(28);
    const m = measurement({ evidence: { invocations: 1, logLines: 20, logBytes: 20 * 326 } });
    const units = happyUnits(m, shape);
    expect(units.logIngestGb * BYTES_PER_GB).toBeCloseTo(
      (20 * 326 + platformLogBytesPerInvocation()) / 10,
      6,
    );
    expect(platformLogBytesPerInvocation()).toBeGreaterThan(400);
  });

  it('X-Ray records the first trace each second and 5 % of the rest, per function with active tracing', () => {
    // Act / Assess
    expect(sampledTracesPerSecond(0.5)).toBe(0.5);
    expect(sampledTracesPerSecond(3)).toBeCloseTo(1.1, 12);
    const m = measurement({ dispatch: { invocations: 1 } });
    expect(happyUnits(m, shape).xrayTrace).toBe(0);
    // 0.1 dispatch invocations per notification at 3.86 notifications/s: every one sampled.
    expect(happyUnits(m, { ...shape, tracing: true }).xrayTrace).toBeGreaterThanOrEqual(0.1);
  });

  it('each outcome event is one EventBridge custom event; windowed sources gather what arrives in their window', () => {
    // Act
    const units = happyUnits(measurement(), shape);
    // Assess
    expect(units.eventBridgeEvent).toBe(2);
    expect(recordsPerInvocation(7.7, { batchSize: 100, maxBatchingWindowSeconds: 5 })).toBeCloseTo(38.5, 9);
    expect(recordsPerInvocation(0.01, { batchSize: 100, maxBatchingWindowSeconds: 5 })).toBe(1);
    expect(recordsPerInvocation(50, { batchSize: 1000, maxBatchingWindowSeconds: 60 })).toBe(1000);
  });
});

describe('the price table and the mix', () => {
  it('every price names its AWS pricing page, the date and the region; the services add up to the total', () => {
    // Prepare
    const units = happyUnits(measurement(), shape);
    // Act
    const cost = costPerMillion(units);
    // Assess
    expect(PRICES.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(PRICES.region).toBe('us-east-1');
    for (const item of COST_ITEMS)
      expect(PRICES.items[item].source).toMatch(/^https:\/\/aws\.amazon\.com\/[a-z0-9-]+\/pricing/);
    const services = Object.values(cost.byService).reduce((a, b) => a + b, 0);
    expect(services).toBeCloseTo(cost.totalPerMillion, 9);
    expect(cost.perMillion.eventBridgeEvent).toBeCloseTo(2, 9);
  });

  it('the realistic mix adds each scenario’s measured extra at its weight', () => {
    // Prepare: a retry writes 5 more units and one more history entry than the happy path
    const m = measurement();
    const rows = [
      { scenario: 'happy', notifications: 10, perNotification: 2, readUnits: 0, historyEntries: 2 },
      { scenario: 'retry_after_429', notifications: 10, perNotification: 7, readUnits: 0, historyEntries: 3 },
      {
        scenario: 'unknown_reconciled',
        notifications: 10,
        perNotification: 9,
        readUnits: 10,
        historyEntries: 3,
      },
    ];
    const happy = happyUnits(m, shape);
    // Act
    const extras = mixExtras(m, shape, rows);
    const mix = mixUnits(happy, extras);
    // Assess
    expect(extras.retry.dynamoWriteUnit).toBe(5);
    expect(extras.unknown.dynamoReadUnit).toBe(1);
    expect(extras.bounce.dynamoWriteUnit).toBe(1);
    expect(mix.dynamoWriteUnit - happy.dynamoWriteUnit).toBeCloseTo(
      5 * MIX.retry + 7 * MIX.unknown + MIX.bounce,
      9,
    );
    // A retry is another delivery: ChangeMessageVisibility and its share of the event source's requests.
    expect(extras.retry.sqsRequest).toBeCloseTo(1 + 2 / 10, 9);
  });
});

describe('what the committed cost results keep of a log line', () => {
  it('masks addresses and phone numbers in an unstructured line', () => {
    // Act
    const kept = maskedLine('ERROR send to p7@example.test failed; sms +44 7700 900123 retried');
    // Assess
    expect(kept).toBe('ERROR send to <address> failed; sms <number> retried');
    expect(maskedLine('x'.repeat(300))).toHaveLength(200);
  });
});
