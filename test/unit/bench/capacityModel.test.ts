import { describe, expect, it } from 'vitest';
import { holdRefreshes, type ScenarioCosts } from '../../../bench/capacityCosts.js';
import type { CapacityCosts } from '../../../bench/capacityInputs.js';
import { type MixInput, parseMix } from '../../../bench/capacityMix.js';
import {
  capacityReport,
  holdGateReads,
  modelAt,
  modelRun,
  perNotification,
  rateAtLimit,
  recordsPerBatch,
} from '../../../bench/capacityModel.js';
import { drainSealsWith } from '../../../bench/capacityPipeline.js';
import { PRICES } from '../../../bench/cost.js';

// The capacity model's arithmetic against cases computed by hand from round, made-up costs (not the
// benchmark's: these tests hold the model to its formulas, the validation holds it to the pipeline).

const use = (w: number, r = 0, wr = w, rr = r) => ({
  writeUnits: w,
  readUnits: r,
  writeRequests: wr,
  readRequests: rr,
});
const scenario = (over: Partial<ScenarioCosts> = {}): ScenarioCosts => ({
  description: 'test',
  deliveries: 1,
  dispatch: { ledger: use(2) },
  reconcile: { ledger: use(6, 2, 4, 2) },
  attentionWritesByState: {},
  sqs: { changeVisibility: 0, sendMessage: 0 },
  events: 2,
  providerRequests: 1,
  reconcileRows: 0,
  transitions: 2,
  ...over,
});

const COSTS: CapacityCosts = {
  source: { benchStartedAt: 'test', benchMode: 'full', capacityMeasuredAt: 'test', capacityCommand: 'test' },
  scenarios: {
    email: scenario(),
    sms: scenario({ dispatch: { ledger: use(3.2, 0, 3) } }),
    receipt: scenario({ dispatch: { ledger: use(2, 1) } }),
    retry: scenario({
      dispatch: { ledger: use(5), 'ledger/attention': use(2, 0, 0) },
      attentionWritesByState: { retry_wait: 1, left: 1 },
      providerRequests: 2,
      transitions: 4,
    }),
    unknown: scenario({
      deliveries: 2,
      dispatch: { ledger: use(8, 1), 'ledger/attention': use(4, 0, 0) },
      attentionWritesByState: { unknown: 1, parked: 2, left: 1 },
      sqs: { changeVisibility: 1, sendMessage: 0 },
      reconcileRows: 1,
    }),
    bounce: scenario({ reconcile: { ledger: use(6, 2, 4, 2), suppression: use(2) } }),
  },
  perBatch: { ledger: use(0, 0, 0, 1), suppression: use(0, 0, 0, 1) },
  perRun: { use: { ledger: use(1, 2, 1, 52) }, invocations: 1, ms: 800 },
  dispatchMs: 60,
  reconcileMsPerInvocation: 1000,
  evidencePush: {
    eventsPerNotification: 2,
    writeUnitsPerEvent: 3,
    readUnitsPerEvent: 1,
    requestsPerEvent: 3,
    invocationsPerEvent: 1,
    sqsRequestsPerEvent: 0,
  },
  reconcileReadUnitsPerRow: 0.14,
  archive: { transitionsPerObject: 300 },
  pacing: { writesPerEnvironmentPerSlot: 2, environments: 4, slotMs: 500 },
};

const mixOf = (over: Partial<MixInput> = {}, deployment: MixInput['deployment'] = {}) =>
  parseMix({
    name: 'test',
    purposes: [{ purpose: 'password-reset', share: 1, channels: { email: 1 } }],
    rates: { retry: 0, unknown: 0, bounce: 0 },
    tenants: { count: 1, topShare: 1 },
    ...over,
    deployment: { evidence: 'pull', ...deployment },
  });

describe('per-notification composition', () => {
  it('weights each purpose and channel by its kind, and adds each fault’s extra over a happy email', () => {
    const mix = mixOf({
      purposes: [
        { purpose: 'receipt', share: 0.5, channels: { email: 1 }, cancellable: true },
        { purpose: 'otp', share: 0.5, channels: { sms: 1 }, smsSpendBreaker: true },
      ],
      smsCountries: { US: 1 },
      rates: { retry: 0.1, unknown: 0, bounce: 0 },
    });
    const n = perNotification(COSTS, mix, mix.deployment);
    // ledger WCU: 0.5 × 2 (receipt) + 0.5 × 3.2 (SMS with a breaker) + 0.1 × (5 − 2) (retry's extra) = 2.9
    expect(n.dispatch.ledger!.writeUnits).toBeCloseTo(2.9, 10);
    // ledger RCU: 0.5 × 1 (the receipt's cancel-marker read) + 0.1 retries × 1 extra call × 1 (every
    // email here is a cancellable receipt) × 1, the marker read again before the retry's call
    expect(n.dispatch.ledger!.readUnits).toBeCloseTo(0.6, 10);
    // the retry's attention writes: 0.1 × 2; its provider request: 1 + 0.1 × (2 − 1)
    expect(n.dispatch['ledger/attention']!.writeUnits).toBeCloseTo(0.2, 10);
    expect(n.providerRequests).toBeCloseTo(1.1, 10);
    expect(n.transitions).toBeCloseTo(2.2, 10);
    expect(n.attentionWritesByState).toEqual({ retry_wait: 0.1, left: 0.1 });
    expect([n.emailShare, n.smsShare]).toEqual([0.5, 0.5]);
  });

  it('a fault’s extra provider call on a cancellable email reads the cancel marker again', () => {
    const mix = mixOf({
      purposes: [
        { purpose: 'receipt', share: 0.5, channels: { email: 1 }, cancellable: true },
        { purpose: 'password-reset', share: 0.5, channels: { email: 1 } },
      ],
      rates: { retry: 0.1, unknown: 0, bounce: 0 },
    });
    const n = perNotification(COSTS, mix, mix.deployment);
    // 0.5 × 1 (each receipt's marker read) + 0.1 retries × 1 extra call × 0.5 cancellable × 1 read
    expect(n.dispatch.ledger!.readUnits).toBeCloseTo(0.55, 10);
    expect(n.dispatch.ledger!.readRequests).toBeCloseTo(0.55, 10);
  });

  it('pushed evidence: the pull feed’s per-event work leaves the reconcile function, the floor’s per event is the evidence function’s', () => {
    const mix = mixOf({ rates: { retry: 0, unknown: 0, bounce: 0.5 } }, { evidence: 'push' });
    const n = perNotification(COSTS, mix, mix.deployment);
    // reconcile ledger: 6 − 2 events × (6 / 2) = 0; evidence ledger: 2 × 3 WCU and 2 × 1 RCU
    expect(n.reconcile.ledger!.writeUnits).toBeCloseTo(0, 10);
    expect(n.evidence.ledger).toEqual({ writeUnits: 6, readUnits: 2, writeRequests: 4, readRequests: 2 });
    // a bounce's suppression write (0.5 × 2) belongs to the evidence function in AWS
    expect(n.evidence.suppression!.writeUnits).toBeCloseTo(1, 10);
    expect(n.reconcile.suppression).toBeUndefined();
  });
});

describe('pushed evidence through a queue', () => {
  it('evidence invocations follow the bench’s measured invocations per event, unless the mix sets a batch', () => {
    const queued = {
      ...COSTS,
      evidencePush: { ...COSTS.evidencePush, invocationsPerEvent: 0.15, sqsRequestsPerEvent: 1.3 },
    };
    const m = modelAt(queued, mixOf({}, { evidence: 'push' }), 1_000);
    const evidence = m.lambda.find((f) => f.fn === 'evidence')!;
    // 1,000/s × 2 events × 0.15; each event still takes 50 ms: 100 concurrent
    expect(evidence.invocationsPerSecond).toBeCloseTo(300, 8);
    expect(evidence.concurrency).toBeCloseTo(100, 8);
    expect(m.sqs.evidenceQueue).toBeCloseTo(2_600, 8);
    const batched = modelAt(queued, mixOf({}, { evidence: 'push', evidenceBatchSize: 10 }), 1_000);
    expect(batched.lambda.find((f) => f.fn === 'evidence')!.invocationsPerSecond).toBeCloseTo(200, 8);
  });
});

describe('batching and Little’s law', () => {
  const lambda = mixOf().deployment.lambda;

  it('a batch holds what arrives during a poller’s cycle, between 1 and the batch size', () => {
    // 100/s: b = 100 × (20 + 60) ms / 5 pollers = 1.6 (cycle 80 ms: one round of five records)
    expect(recordsPerBatch(100, lambda, 60)).toBeCloseTo(1.6, 10);
    // 10/s: under one arrival per cycle, one record per batch
    expect(recordsPerBatch(10, lambda, 60)).toBe(1);
    // 10,000/s: full batches of 10
    expect(recordsPerBatch(10_000, lambda, 60)).toBe(10);
  });

  it('invocations: first deliveries arrive in the publisher’s batches, redeliveries one by one; concurrency = invocations × duration', () => {
    // Published one by one: 100/s at 1.6 records per batch → 62.5 invocations/s of 80 ms → 5 concurrent
    const single = modelAt(COSTS, mixOf({}, { publishBatchSize: 1 }), 100).lambda.find(
      (f) => f.fn === 'dispatch',
    )!;
    expect(single.invocationsPerSecond).toBeCloseTo(100 / 1.6, 10);
    expect(single.durationMs).toBe(80);
    expect(single.concurrency).toBeCloseTo(5, 10);
    // Published 10 per SendMessageBatch (the default): 10 invocations/s of 20 + 2 × 60 ms → 1.4 concurrent
    const batched = modelAt(COSTS, mixOf(), 100).lambda.find((f) => f.fn === 'dispatch')!;
    expect(batched.invocationsPerSecond).toBeCloseTo(10, 10);
    expect(batched.concurrency).toBeCloseTo(1.4, 10);
    // Every notification unknown once: 100 first deliveries in batches of 10, 100 redeliveries at the
    // fill of 200/s one by one (200 × 80 ms / 5 = 3.2 → with ⌈3.2 / 5⌉ = 1 round, 3.2 per batch)
    const unknown = modelAt(COSTS, mixOf({ rates: { retry: 0, unknown: 1, bounce: 0 } }), 100);
    expect(unknown.lambda.find((f) => f.fn === 'dispatch')!.invocationsPerSecond).toBeCloseTo(
      10 + 100 / 3.2,
      10,
    );
    // 10,000/s: 1,000 batches of 10, each 20 + 2 × 60 = 140 ms → 140 concurrent
    const at10k = modelAt(COSTS, mixOf(), 10_000).lambda.find((f) => f.fn === 'dispatch')!;
    expect(at10k.invocationsPerSecond).toBeCloseTo(1_000, 10);
    expect(at10k.concurrency).toBeCloseTo(140, 10);
  });

  it('DynamoDB per resource: per notification × rate + per batch × invocations + per run × runs', () => {
    const m = modelAt(COSTS, mixOf(), 100);
    expect(m.dynamo.ledger!.writeUnits).toBeCloseTo(100 * 2 + 100 * 6 + 1 / 300, 10);
    expect(m.dynamo.ledger!.readUnits).toBeCloseTo(100 * 2 + 2 / 300, 10);
    // requests: 200 dispatch writes + 10 gate-facts reads (one per batch) + 100 × 6 reconcile + 53 per run
    expect(m.dynamo.ledger!.writeRequests + m.dynamo.ledger!.readRequests).toBeCloseTo(
      200 + 10 + 600 + 53 / 300,
      10,
    );
    expect(m.dynamo.suppression!.readRequests).toBeCloseTo(10, 10);
  });
});

describe('limits', () => {
  it('a spend breaker’s counter item: every counted SMS writes it; 1.2 WCU per SMS reaches 1,000 at 833/s', () => {
    const mix = mixOf({
      purposes: [{ purpose: 'otp', share: 1, channels: { sms: 1 }, smsSpendBreaker: true }],
      smsCountries: { US: 1 },
    });
    const m = modelAt(COSTS, mix, 1_000);
    const breaker = m.hotKeys.find((h) => h.key === 'brk#otp#US')!;
    expect(breaker.writeUnitsPerSecond).toBeCloseTo(1_200, 6);
    expect(m.limits.find((l) => l.id === 'partition.brk#otp#US')!.utilization).toBeCloseTo(1.2, 6);
    expect(rateAtLimit(COSTS, mix, 'partition.brk#otp#US')).toBeCloseTo(1_000 / 1.2, 3);
  });

  it('the reconcile page budget: unknown rows × their visits × the period against pages × page size', () => {
    const mix = mixOf(
      { rates: { retry: 0, unknown: 0.01, bounce: 0 } },
      { reconcile: { periodSeconds: 300, maxPagesPerRun: 50, pageSize: 25, unknownWaitRuns: 1 } },
    );
    // rows per run = R × (0.01 × 1 measured row + 0.01 × 1 waiting visit) × 300 = 6R; 1,250 rows → R = 208.3
    const m = modelAt(COSTS, mix, 100);
    expect(m.reconcile.rowsPerRun).toBeCloseTo(600, 6);
    expect(m.reconcile.pagesPerRun).toBe(24);
    expect(rateAtLimit(COSTS, mix, 'reconcile.rowsPerRun')).toBeCloseTo(1_250 / 6, 3);
    const report = capacityReport(COSTS, mix, 100);
    expect(report.firstLimit?.id).toBe('reconcile.rowsPerRun');
    // What moves it: 100 pages per run → 2,500 rows / 6R = 416.7/s; with a 60 s schedule too, 0.02 × 60
    // = 1.2R rows per run → 2,500 / 1.2 = 2,083/s
    const moves = Object.fromEntries(report.firstLimitMoves.map((m) => [m.setting, m.hitsAtRate]));
    expect(moves['reconcileMaxPagesPerRun 100']).toBeCloseTo(2_500 / 6, 3);
    expect(moves['reconcileMaxPagesPerRun 100, a 60 s reconcileSchedule']).toBeCloseTo(2_500 / 1.2, 3);
  });

  it('the attention index: a state’s writes (and its share of the leaving ones) over its shards', () => {
    const mix = mixOf({ rates: { retry: 1, unknown: 0, bounce: 0 } }, { attentionShards: 4 });
    const m = modelAt(COSTS, mix, 4_000);
    // retry_wait: 1 entering + 1 leaving per notification, × 4,000/s ÷ 4 shards = 2,000 WCU/s per shard
    const shard = m.hotKeys.find((h) => h.key.startsWith('attention retry_wait'))!;
    expect(shard.writeUnitsPerSecond).toBeCloseTo(2_000, 6);
    expect(rateAtLimit(COSTS, mix, `partition.${shard.key}`)).toBeCloseTo(2_000, 3);
  });

  it('a limit that never binds is reached at no rate', () => {
    const report = capacityReport(COSTS, mixOf(), 10);
    // Nothing writes the suppression table in this mix (no bounces): its write quota is never reached.
    expect(report.limits.find((l) => l.id === 'table.suppression.write')?.hitsAtRate).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(report.limits.every((l) => l.hitsAtRate > 10)).toBe(true);
  });
});

describe('dollars per month', () => {
  it('units per second × 30 days × the dated price', () => {
    const m = modelAt(COSTS, mixOf(), 1);
    const month = 30 * 86_400;
    const wcu = 2 + 6 + 1 / 300;
    expect(m.costPerMonth.items.dynamoWriteUnit).toBeCloseTo(
      wcu * month * PRICES.items.dynamoWriteUnit.usd,
      8,
    );
    // 1 email request/s for a month at $0.10 per 1,000
    expect(m.costPerMonth.sesFees).toBeCloseTo(month * 0.0001, 6);
    expect(m.costPerMonth.total).toBeCloseTo(
      Object.values(m.costPerMonth.items).reduce((a, b) => a + b, 0),
      10,
    );
  });
});

describe('a run of known size', () => {
  it('totals per-notification parts × notifications and per-run parts × runs', () => {
    const totals = modelRun(COSTS, mixOf(), { notifications: 100, rate: 10, runs: 5 });
    expect(totals.reconcile.ledger!.readUnits).toBeCloseTo(100 * 2 + 5 * 2, 8);
    expect(totals.reconcile.ledger!.readRequests).toBeCloseTo(100 * 2 + 5 * 52, 8);
    // published 10 per batch: 10 invocations, each one gate-facts read per table
    expect(totals.dispatchInvocations).toBeCloseTo(10, 8);
    expect(totals.dispatch.suppression!.readRequests).toBeCloseTo(10, 8);
    expect(totals.reconcileInvocations).toBeCloseTo(5, 8);
    expect(totals.providerRequests).toBeCloseTo(100, 8);
  });
});

describe('the transport-hold gate (lib/rate/TransportHolds.ts check)', () => {
  // 3 reads per refresh of 1 RCU each, a clear answer trusted for 5 s per process.
  const HELD: CapacityCosts = {
    ...COSTS,
    holdCheck: { readsPerRefresh: 3, readUnitsPerRead: 1, refreshMs: 5_000 },
  };

  it('is read per environment and refresh, not per record', () => {
    // 100/s of email: 1.4 concurrent environments (above), each refreshing 0.2 times a second, 3 reads
    // each: 0.84 reads/s beside 100 records/s (the old model charged the measured reads per record)
    const m = modelAt(HELD, mixOf(), 100);
    expect(m.byFunction.dispatch.ledger!.readUnits).toBeCloseTo(0.84, 10);
    expect(m.byFunction.dispatch.ledger!.readRequests).toBeCloseTo(10 + 0.84, 10);
    // 10,000/s: 140 environments × 0.2 × 3 = 84 reads/s, not 10,000
    expect(modelAt(HELD, mixOf(), 10_000).byFunction.dispatch.ledger!.readUnits).toBeCloseTo(84, 8);
  });

  it('never reads more often than records check, and once per transport', () => {
    const email = mixOf();
    const n = { emailShare: 1, smsShare: 0 };
    // 0.1 records/s in one environment: each record finds the cache stale and reads once
    expect(holdGateReads(HELD, email.deployment, 0.1, n, 1)).toBeCloseTo(0.1, 10);
    // half email, half SMS at 100 records/s in 2 environments: 2 transports × 2 × 0.2 × 3 = 2.4 reads/s;
    // one transport for both (the harness's simulator): 1.2
    const half = { emailShare: 0.5, smsShare: 0.5 };
    expect(holdGateReads(HELD, email.deployment, 100, half, 2)).toBeCloseTo(2.4, 10);
    const shared = mixOf({}, { transports: 'shared' });
    expect(holdGateReads(HELD, shared.deployment, 100, half, 2)).toBeCloseTo(1.2, 10);
    // no measurement (results older than the split): no term, the reads stay in the kinds' costs
    expect(holdGateReads(COSTS, email.deployment, 100, half, 2)).toBe(0);
  });

  it('a validation-sized run: 320 notifications at 8/s is 40 s of one environment, 8 refreshes', () => {
    const totals = modelRun(HELD, mixOf(), { notifications: 320, rate: 8, runs: 10 });
    // the fixture's email reads nothing else: 8 refreshes × 3 reads
    expect(totals.dispatch.ledger!.readUnits).toBeCloseTo(24, 8);
  });

  it('a refresh is the reads of one item less than half a refresh apart', () => {
    const reads = [0, 5, 30, 5_200, 5_210, 11_000].map((at) => ({ at, key: 'hold#a' }));
    expect(holdRefreshes([...reads, { at: 100, key: 'hold#b' }], 5_000)).toBe(4);
  });
});

describe('the sweep releases the seals a run wrote (bench/capacityPipeline.ts drainSeals)', () => {
  it('runs the reconcile schedule just past each seal’s due time until none is left', async () => {
    // Prepare: two seals due at 1 s and 40 s; a run releases every seal due by then (as sweepSeal does
    // for a seal whose rows are final).
    let clock = 0;
    let seals = [{ dueAt: 1_000 }, { dueAt: 40_000 }];
    const runsAt: number[] = [];
    // Act
    const left = await drainSealsWith(
      {
        seals: async () => seals,
        run: async () => {
          runsAt.push(clock);
          seals = seals.filter((s) => s.dueAt > clock);
        },
        sleep: async (ms) => {
          clock += ms;
        },
        now: () => clock,
      },
      120_000,
    );
    // Assess
    expect(left).toBe(0);
    expect(runsAt).toEqual([1_100, 40_100]);
  });

  it('stops at the timeout and says how many seals are left', async () => {
    let clock = 0;
    const left = await drainSealsWith(
      {
        // A seal the sweep keeps re-arming (its row is quarantined): never released.
        seals: async () => [{ dueAt: clock }],
        run: async () => undefined,
        sleep: async (ms) => {
          clock += ms;
        },
        now: () => clock,
      },
      3_000,
    );
    expect(left).toBe(1);
    expect(clock).toBe(3_000);
  });
});
