import { BUILT_IN_PURPOSES } from '../lib/domain/purposes.js';
import type { FaultSpecInput } from '../lib/simulator/faults.js';
import type { Pipeline, PipelineSnapshot } from './capacityPipeline.js';
import { addUse, emptyUse, type Use, type UseByResource } from './capacityProxy.js';

/**
 * The benchmark's capacity section: what one notification of each kind costs through the real pipeline
 * (bench/capacityPipeline.ts), per function, per table and per index, and what the fixed work costs (a
 * reconcile run with nothing to do, the gate-facts read of a queue batch). The capacity model
 * (bench/capacityModel.ts) composes these by a traffic mix; it reads them from bench/results/latest.json
 * (`capacity`), so a new measurement changes its answers without a change to the model.
 */

export const SCENARIO_NAMES = ['email', 'sms', 'receipt', 'retry', 'unknown', 'bounce'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

export interface ScenarioCosts {
  description: string;
  /** Records the dispatch function handled per notification (first delivery, redeliveries, resumes). */
  deliveries: number;
  /**
   * The dispatch function's DynamoDB use per notification, without the per-batch gate-facts read and
   * without the transport-hold gate's reads (paid per environment and refresh: `holdCheck`).
   */
  dispatch: UseByResource;
  /**
   * The reconcile function's use per notification beyond its fixed per-run work: the pull feed's events
   * (this harness reads provider evidence as the REST convention does), lookups, the sweep's resumes.
   */
  reconcile: UseByResource;
  /** Attention-index write units per notification, by the partition a write put the row in. */
  attentionWritesByState: Record<string, number>;
  /** SQS requests per notification beyond publish, receive and delete (those follow the batching). */
  sqs: { changeVisibility: number; sendMessage: number };
  /** Provider events (the pull feed) and provider requests per notification. */
  events: number;
  providerRequests: number;
  /** Rows the reconcile pages processed per notification. */
  reconcileRows: number;
  /** Transitions (history entries) per notification: what the archive stores. */
  transitions: number;
}

export interface CapacityCostsResult {
  measuredAt: string;
  /** How this section was produced (`npm run bench`, `npm run capacity -- --measure`). */
  command: string;
  notificationsPerScenario: number;
  reconcilePeriodMs: number;
  scenarios: Record<ScenarioName, ScenarioCosts>;
  /** The dispatch function's gate-facts BatchGetItem, per invocation (per queue batch). */
  perBatch: UseByResource;
  /**
   * The dispatcher's transport-hold gate (lib/rate/TransportHolds.ts `check`): a strongly consistent
   * GetItem of `hold#<transport>` that a clear answer caches per process for `refreshMs`. Every record
   * that checks while the cache is stale reads, so one refresh is `reads ÷ refreshes` reads (a refresh:
   * the reads of one item less than half a refresh apart), each `readUnits ÷ reads` units.
   */
  holdCheck?: { reads: number; refreshes: number; readUnits: number; refreshMs: number };
  /** One reconcile run with nothing to do: the sweep, the census, the feed's cursor, one empty page. */
  perRun: { use: UseByResource; invocations: number; ms: number };
  /** Wall time of the dispatch function per record, and of a reconcile page, in this harness (ms). */
  dispatchMsPerRecord: number;
  reconcileMsPerInvocation: number;
}

/**
 * How long the hold gate trusts a clear answer: lib/rate/TransportHolds.ts `check` (`refreshMs ?? 5_000`;
 * functions/dispatch/index.ts sets none).
 */
export const HOLD_REFRESH_MS = 5_000;

/** Reads of one hold item less than half a refresh apart are one refresh (the cache was stale for all). */
export const holdRefreshes = (
  reads: ReadonlyArray<{ at: number; key: string }>,
  refreshMs: number,
): number => {
  let refreshes = 0;
  const last = new Map<string, number>();
  for (const r of [...reads].sort((a, b) => a.at - b.at)) {
    const before = last.get(r.key);
    if (before === undefined || r.at - before > refreshMs / 2) refreshes += 1;
    last.set(r.key, r.at);
  }
  return refreshes;
};

const reset = BUILT_IN_PURPOSES.find((p) => p.purpose === 'password-reset')!;

/**
 * The pipeline's purposes: SMS resets carry a spend breaker (its count is part of an SMS's cost), with a
 * threshold no measurement reaches.
 */
export const CAPACITY_PURPOSES = [
  { ...reset, smsSpendBreaker: { maxSends: 10_000_000, windowSeconds: 3600, cooldownSeconds: 60 } },
];

export const emailBody = (id: string, tenant = 'capacity'): string =>
  JSON.stringify({
    eventId: id,
    purpose: 'password-reset',
    recipient: { ref: `user-${id}`, email: `${id}@example.com` },
    channels: ['email'],
    template: { id: 'password-reset', revision: 'v1' },
    data: { appName: 'Quest', resetUrl: 'https://quest.example/reset', expiresInMinutes: 10 },
    secrets: { token: `capacity-token-${id}` },
    expiresAt: new Date(Date.now() + 30 * 60_000).toISOString(),
    tenant,
  });

export const smsBody = (id: string, index: number, tenant = 'capacity'): string =>
  JSON.stringify({
    eventId: id,
    purpose: 'password-reset',
    recipient: { ref: `user-${id}`, phone: `+4915${String(100_000_000 + index).slice(-9)}` },
    channels: ['sms'],
    template: { id: 'password-reset', revision: 'v1' },
    data: { appName: 'Quest', resetUrl: 'https://quest.example/reset', expiresInMinutes: 10 },
    secrets: { token: `capacity-token-${id}` },
    expiresAt: new Date(Date.now() + 30 * 60_000).toISOString(),
    tenant,
  });

export const receiptBody = (id: string, tenant = 'capacity'): string =>
  JSON.stringify({
    eventId: id,
    purpose: 'receipt',
    recipient: { ref: `user-${id}`, email: `${id}@example.com` },
    channels: ['email'],
    template: { id: 'receipt', revision: 'v4' },
    data: {
      playerName: 'Ana',
      orderId: id,
      lines: [{ name: 'Dragon skin', amount: '4.99' }],
      total: '4.99',
      currency: 'EUR',
    },
    tenant,
  });

/** The provider's behaviour for one notification of a scenario, by its destination. */
export const FAULTS: Partial<Record<ScenarioName, (to: string) => FaultSpecInput>> = {
  retry: (to) => ({ match: { to }, fault: 'status_429', times: 1, retryAfterSeconds: 0 }),
  unknown: (to) => ({ match: { to }, fault: 'accept_then_drop', times: 1 }),
  bounce: (to) => ({ match: { to }, fault: 'bounce', times: 1 }),
};

const SCENARIOS: Record<ScenarioName, { description: string; body: (id: string, i: number) => string }> = {
  email: { description: 'password reset by email, accepted and delivered', body: (id) => emailBody(id) },
  sms: {
    description: 'password reset by SMS, counted by the spend breaker',
    body: (id, i) => smsBody(id, i),
  },
  receipt: {
    description: 'receipt by email (cancellable: the cancel-marker read)',
    body: (id) => receiptBody(id),
  },
  retry: { description: 'email answered 429 once, then accepted', body: (id) => emailBody(id) },
  unknown: {
    description: 'email whose answer is lost (unknown), then replayed or looked up',
    body: (id) => emailBody(id),
  },
  bounce: {
    description: 'email accepted, then a permanent bounce (suppression)',
    body: (id) => emailBody(id),
  },
};

/** How long a scenario or a validation run waits for the sweep to release the seals it wrote. */
export const SEAL_DRAIN_MS = 120_000;

export const destinationOf = (body: string): string => {
  const recipient = (JSON.parse(body) as { recipient: { email?: string; phone?: string } }).recipient;
  return (recipient.email ?? recipient.phone)!;
};

const scaleUse = (use: UseByResource, factor: number): UseByResource =>
  Object.fromEntries(Object.entries(use).map(([k, u]) => [k, addUse(emptyUse(), u, factor)]));

/** a − b × factor, per resource, never below zero (a fixed cost measured apart is subtracted). */
export const subtractUse = (a: UseByResource, b: UseByResource, factor = 1): UseByResource => {
  const out: UseByResource = {};
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[key] ?? emptyUse();
    const y = b[key] ?? emptyUse();
    const minus = (f: keyof Use) => Math.max(0, x[f] - y[f] * factor);
    out[key] = {
      readUnits: minus('readUnits'),
      writeUnits: minus('writeUnits'),
      readRequests: minus('readRequests'),
      writeRequests: minus('writeRequests'),
    };
  }
  return out;
};

export const mergeUse = (...uses: UseByResource[]): UseByResource => {
  const out: UseByResource = {};
  for (const use of uses)
    for (const [key, u] of Object.entries(use)) out[key] = addUse(out[key] ?? emptyUse(), u);
  return out;
};

const round = (use: UseByResource): UseByResource =>
  Object.fromEntries(
    Object.entries(use).map(([k, u]) => [
      k,
      {
        readUnits: Number(u.readUnits.toFixed(4)),
        writeUnits: Number(u.writeUnits.toFixed(4)),
        readRequests: Number(u.readRequests.toFixed(4)),
        writeRequests: Number(u.writeRequests.toFixed(4)),
      },
    ]),
  );

/** Every request of a snapshot, per function, BatchGetItem included. */
const allOf = (t: PipelineSnapshot['dispatch']): UseByResource => mergeUse(t.byResource, t.batchGets);

/**
 * Runs `count` notifications of each scenario through the pipeline (published at 10/s, the reconcile
 * schedule every `periodMs`), after three idle reconcile runs that give the fixed per-run cost.
 */
export const measureCapacityCosts = async (
  pipeline: Pipeline,
  options: { count: number; periodMs: number; command: string; progress?: (line: string) => void },
): Promise<CapacityCostsResult> => {
  const progress = options.progress ?? (() => undefined);
  // The fixed cost: reconcile runs with nothing to do.
  pipeline.reset();
  const idleRuns = 3;
  for (let i = 0; i < idleRuns; i++) await pipeline.reconcileRun();
  const idle = pipeline.snapshot();
  const perRun = {
    use: round(scaleUse(allOf(idle.reconcile), 1 / idleRuns)),
    invocations: idle.functions.reconcileInvocations / idleRuns,
    ms: idle.functions.reconcileMs / idleRuns,
  };
  progress(`capacity: idle reconcile run: ${JSON.stringify(perRun.use)}`);

  const scenarios = {} as Record<ScenarioName, ScenarioCosts>;
  let batchGets: UseByResource = {};
  const holdCheck = { reads: 0, refreshes: 0, readUnits: 0, refreshMs: HOLD_REFRESH_MS };
  let invocations = 0;
  let records = 0;
  let dispatchMs = 0;
  let reconcileMs = 0;
  let reconcileInvocations = 0;
  for (const name of SCENARIO_NAMES) {
    const def = SCENARIOS[name];
    pipeline.reset();
    // Ids of the validation's shape (`val-<base36 time>-<n>`, bench/capacityValidate.ts): a row's write
    // units depend on its size near 1 KB, so the costs are measured on rows as large as the ones checked.
    const run = Date.now().toString(36);
    const bodies = Array.from({ length: options.count }, (_, i) => def.body(`cap-${run}-${i}`, i));
    const fault = FAULTS[name];
    if (fault) for (const body of bodies) pipeline.simulator.addFault(fault(destinationOf(body)));
    const keys = bodies.flatMap((b) => pipeline.keysOf(b));
    const stop = pipeline.schedule(options.periodMs);
    let rows: Awaited<ReturnType<Pipeline['settle']>>;
    try {
      await pipeline.publish(bodies, 10);
      rows = await pipeline.settle(keys, 300_000);
    } finally {
      await stop();
    }
    // The events that arrived after the last scheduled run.
    await pipeline.reconcileRun();
    // The sweep releases each seal a parking grace later: part of this kind's cost, not the next one's.
    const left = await pipeline.drainSeals(SEAL_DRAIN_MS);
    if (left > 0) progress(`capacity: ${name}: ${left} seal(s) still held after ${SEAL_DRAIN_MS} ms`);
    const s = pipeline.snapshot();
    const n = options.count;
    const runs = s.functions.reconcileRuns;
    const per = (x: number) => Number((x / n).toFixed(4));
    const holdUnits = s.dispatch.holdReads.reduce((sum, r) => sum + r.readUnits, 0);
    const holdUse: UseByResource = {
      ledger: {
        readUnits: holdUnits,
        writeUnits: 0,
        readRequests: s.dispatch.holdReads.length,
        writeRequests: 0,
      },
    };
    holdCheck.reads += s.dispatch.holdReads.length;
    holdCheck.refreshes += holdRefreshes(s.dispatch.holdReads, HOLD_REFRESH_MS);
    holdCheck.readUnits += holdUnits;
    const writesByState: Record<string, number> = {};
    for (const t of [s.dispatch, s.reconcile])
      for (const [state, units] of Object.entries(t.attentionWritesByState))
        writesByState[state] = (writesByState[state] ?? 0) + units;
    const byState = Object.fromEntries(Object.entries(writesByState).map(([k, v]) => [k, per(v)]));
    scenarios[name] = {
      description: def.description,
      deliveries: per(s.functions.dispatchRecords),
      dispatch: round(scaleUse(subtractUse(s.dispatch.byResource, holdUse), 1 / n)),
      reconcile: round(scaleUse(subtractUse(allOf(s.reconcile), perRun.use, runs), 1 / n)),
      attentionWritesByState: byState,
      sqs: {
        changeVisibility: per(s.sqs.byAction.ChangeMessageVisibility ?? 0),
        sendMessage: per(s.sqs.byAction.SendMessage ?? 0),
      },
      events: per(s.provider.events),
      providerRequests: per(s.provider.requests),
      reconcileRows: per(s.functions.reconcileRows),
      transitions: per(rows.reduce((sum, r) => sum + r.history.length, 0)),
    };
    batchGets = mergeUse(batchGets, s.dispatch.batchGets);
    invocations += s.functions.dispatchInvocations;
    records += s.functions.dispatchRecords;
    dispatchMs += s.functions.dispatchMs;
    reconcileMs += s.functions.reconcileMs;
    reconcileInvocations += s.functions.reconcileInvocations;
    const ledger = scenarios[name].dispatch.ledger;
    progress(
      `capacity: ${name}: ${scenarios[name].deliveries} deliveries, dispatch ledger ${ledger?.writeUnits ?? 0} WCU + ${ledger?.readUnits ?? 0} RCU, ${runs} reconcile runs per ${n}`,
    );
  }
  return {
    measuredAt: new Date().toISOString(),
    command: options.command,
    notificationsPerScenario: options.count,
    reconcilePeriodMs: options.periodMs,
    scenarios,
    perBatch: round(scaleUse(batchGets, 1 / Math.max(1, invocations))),
    holdCheck,
    perRun,
    dispatchMsPerRecord: Number((dispatchMs / Math.max(1, records)).toFixed(2)),
    reconcileMsPerInvocation: Number((reconcileMs / Math.max(1, reconcileInvocations)).toFixed(2)),
  };
};
