import type { ScenarioCosts, ScenarioName } from './capacityCosts.js';
import type { CapacityCosts } from './capacityInputs.js';
import type { Deployment, Mix } from './capacityMix.js';
import type { Use, UseByResource } from './capacityProxy.js';
import { type CostItem, PRICES } from './cost.js';

/**
 * The capacity model: what a deployment needs at `rate` notifications per second of a mix, computed
 * from the benchmark's measured costs (bench/capacityInputs.ts) and nothing else but the deployment's
 * settings and the published limits below. Pure arithmetic: every figure is per second unless named.
 *
 *   per notification  = Σ purpose share × channel share × the measured kind (email, SMS with a breaker,
 *                       cancellable receipt) + Σ rate × (faulted kind − happy email)   [retry, unknown, bounce]
 *                       + Σ rate × extra provider calls × cancellable email share × the cancel-marker read
 *   DynamoDB          = rate × per notification + dispatcher invocations × gate-facts read per batch
 *                       + Σ transports min(records, environments × refreshes/s) × hold-gate reads per refresh
 *                       + reconcile runs × the idle run + pushed events × the protocol floor's per event
 *   invocations       = first deliveries ÷ max(publish batch, fill) + redeliveries ÷ fill, where the fill
 *                       is what arrives per poller during one batch's cycle (1 … batch size)
 *   concurrency       = invocations × duration (Little's law)
 *
 * Per-partition limits: "each individual partition is limited to 1,000 write units per second and 3,000
 * read units per second" (Amazon DynamoDB Developer Guide, warm throughput scenarios,
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html; the
 * same holds for a global secondary index's partitions:
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html).
 * One item never spans partitions, so one hot item is bounded by them whatever adaptive capacity does.
 */

export const LIMITS = {
  partitionWcu: 1_000,
  partitionRcu: 3_000,
  /** On-demand, per table: 40,000 read and 40,000 write request units (adjustable). */
  tableRequestUnits: 40_000,
  source: {
    partition:
      'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html',
    table: 'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html',
    lambda: 'https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html',
    sqsEventSource: 'https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html',
    ses: 'https://docs.aws.amazon.com/ses/latest/dg/quotas.html',
    sms: 'https://docs.aws.amazon.com/sms-voice/latest/userguide/sms-limitations-mps.html',
  },
} as const;

const SECONDS_PER_MONTH = 30 * 86_400;
const USE_FIELDS = ['readUnits', 'writeUnits', 'readRequests', 'writeRequests'] as const;

// ── per-notification vectors ───────────────────────────────────────────────────────────────────────

type Flat = Record<string, number>;

const flatten = (s: ScenarioCosts): Flat => {
  const out: Flat = {
    deliveries: s.deliveries,
    events: s.events,
    providerRequests: s.providerRequests,
    reconcileRows: s.reconcileRows,
    transitions: s.transitions,
    'sqs.changeVisibility': s.sqs.changeVisibility,
    'sqs.sendMessage': s.sqs.sendMessage,
  };
  for (const fn of ['dispatch', 'reconcile'] as const)
    for (const [resource, use] of Object.entries(s[fn]))
      for (const f of USE_FIELDS) out[`${fn}|${resource}|${f}`] = use[f];
  for (const [state, units] of Object.entries(s.attentionWritesByState)) out[`attn|${state}`] = units;
  return out;
};

const axpy = (into: Flat, x: Flat, a: number, clampAtZero = false): void => {
  for (const [k, v] of Object.entries(x)) {
    const value = a * v;
    into[k] = (into[k] ?? 0) + (clampAtZero ? Math.max(0, value) : value);
  }
};

const minus = (a: Flat, b: Flat): Flat => {
  const out: Flat = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)]))
    out[k] = Math.max(0, (a[k] ?? 0) - (b[k] ?? 0));
  return out;
};

const useOf = (flat: Flat, fn: string): UseByResource => {
  const out: UseByResource = {};
  for (const [k, v] of Object.entries(flat)) {
    const [f, resource, field] = k.split('|');
    if (f !== fn || !resource || !field) continue;
    out[resource] ??= { readUnits: 0, writeUnits: 0, readRequests: 0, writeRequests: 0 };
    out[resource]![field as keyof Use] += v;
  }
  return out;
};

export interface NotificationCost {
  deliveries: number;
  events: number;
  providerRequests: number;
  reconcileRows: number;
  transitions: number;
  sqs: { changeVisibility: number; sendMessage: number };
  dispatch: UseByResource;
  reconcile: UseByResource;
  /** Pushed evidence (the evidence function); empty when the reconcile run pulls it. */
  evidence: UseByResource;
  attentionWritesByState: Record<string, number>;
  /** Shares of the traffic by channel. */
  emailShare: number;
  smsShare: number;
}

/** The kind a purpose's channel is measured as. */
const kindOf = (channel: 'email' | 'sms', p: Mix['purposes'][number]): ScenarioName[] => {
  if (channel === 'email') return [p.cancellable ? 'receipt' : 'email'];
  return p.cancellable
    ? [p.smsSpendBreaker ? 'sms' : 'email', 'receipt']
    : [p.smsSpendBreaker ? 'sms' : 'email'];
};

export const perNotification = (costs: CapacityCosts, mix: Mix, deployment: Deployment): NotificationCost => {
  const v = Object.fromEntries(Object.entries(costs.scenarios).map(([k, s]) => [k, flatten(s)])) as Record<
    ScenarioName,
    Flat
  >;
  const happy = v.email;
  const total: Flat = {};
  let emailShare = 0;
  let smsShare = 0;
  for (const p of mix.purposes)
    for (const channel of ['email', 'sms'] as const) {
      const w = p.share * (p.channels[channel] ?? 0);
      if (w === 0) continue;
      if (channel === 'email') emailShare += w;
      else smsShare += w;
      const [kind, extra] = kindOf(channel, p);
      axpy(total, v[kind!], w);
      // A cancellable SMS: its kind plus the receipt's extra over a plain email (the marker read).
      if (extra) axpy(total, minus(v[extra], happy), w);
    }
  for (const k of ['retry', 'unknown', 'bounce'] as const) axpy(total, minus(v[k], happy), mix.rates[k]);
  // A cancellable purpose reads its cancel marker (strongly consistent) after every `dispatching` write,
  // before each provider call (lib/dispatch/phases/confirm.ts): the extra calls of a retry or a replay read
  // it again. The faulted kinds are measured on plain emails, so that read is added for the cancellable
  // share of the emails they stand for: the receipt's extra read × each fault's extra provider calls.
  const cancellableEmail = mix.purposes.reduce(
    (sum, p) => sum + (p.cancellable ? p.share * (p.channels.email ?? 0) : 0),
    0,
  );
  if (cancellableEmail > 0 && emailShare > 0) {
    const marker = minus(v.receipt, happy);
    const extraCalls = (['retry', 'unknown', 'bounce'] as const).reduce(
      (sum, k) =>
        sum + mix.rates[k] * Math.max(0, (v[k].providerRequests ?? 0) - (happy.providerRequests ?? 0)),
      0,
    );
    const reread = extraCalls * (cancellableEmail / emailShare);
    for (const f of ['readUnits', 'readRequests'] as const) {
      const key = `dispatch|ledger|${f}`;
      total[key] = (total[key] ?? 0) + reread * (marker[key] ?? 0);
    }
  }

  const events = total.events ?? 0;
  let reconcile = useOf(total, 'reconcile');
  let evidence: UseByResource = {};
  if (deployment.evidence === 'push') {
    // The harness reads events from the pull feed inside the reconcile run: take the feed's per-event
    // work out of the reconcile function and give the evidence function the protocol floor's per event.
    const perEvent = useOf(happy, 'reconcile');
    const happyEvents = Math.max(1e-9, happy.events ?? 0);
    const adjusted: UseByResource = {};
    for (const [resource, use] of Object.entries(reconcile)) {
      const each = perEvent[resource];
      adjusted[resource] = Object.fromEntries(
        USE_FIELDS.map((f) => [f, Math.max(0, use[f] - (events * (each?.[f] ?? 0)) / happyEvents)]),
      ) as unknown as Use;
    }
    // A bounce's suppression write is the evidence function's in AWS.
    const suppression = adjusted.suppression;
    delete adjusted.suppression;
    reconcile = adjusted;
    const e = costs.evidencePush;
    const readRequests = Math.min(e.requestsPerEvent, Math.ceil(e.readUnitsPerEvent));
    evidence = {
      ledger: {
        readUnits: events * e.readUnitsPerEvent,
        writeUnits: events * e.writeUnitsPerEvent,
        readRequests: events * readRequests,
        writeRequests: events * Math.max(0, e.requestsPerEvent - readRequests),
      },
      ...(suppression ? { suppression } : {}),
    };
  }
  const attentionWritesByState: Record<string, number> = {};
  for (const [k, value] of Object.entries(total))
    if (k.startsWith('attn|') && value > 0) attentionWritesByState[k.slice(5)] = value;
  return {
    deliveries: total.deliveries ?? 0,
    events,
    providerRequests: total.providerRequests ?? 0,
    reconcileRows: total.reconcileRows ?? 0,
    transitions: total.transitions ?? 0,
    sqs: { changeVisibility: total['sqs.changeVisibility'] ?? 0, sendMessage: total['sqs.sendMessage'] ?? 0 },
    dispatch: useOf(total, 'dispatch'),
    reconcile,
    evidence,
    attentionWritesByState,
    emailShare,
    smsShare,
  };
};

// ── batching, Little's law ─────────────────────────────────────────────────────────────────────────

/**
 * Records per dispatcher invocation at `deliveriesPerSecond` when messages arrive one by one: a poller
 * that just finished a batch finds what arrived during its cycle (receive, delete, and
 * ⌈b / recordConcurrency⌉ rounds of the dispatch time), spread over `pollers`; never under 1, never over
 * the batch size. Iterated to its fixed point. (A publisher's batch arrives together: see `modelAt`.)
 */
export const recordsPerBatch = (
  deliveriesPerSecond: number,
  lambda: Deployment['lambda'],
  dispatchMs: number,
) => {
  let b = 1;
  for (let i = 0; i < 50; i++) {
    const cycleMs = lambda.pollOverheadMs + Math.ceil(b / lambda.recordConcurrency) * dispatchMs;
    const next = Math.min(
      lambda.batchSize,
      Math.max(1, (deliveriesPerSecond * cycleMs) / 1000 / lambda.pollers),
    );
    if (Math.abs(next - b) < 1e-9) break;
    b = next;
  }
  return b;
};

const scaleUse = (use: UseByResource, a: number): UseByResource =>
  Object.fromEntries(
    Object.entries(use).map(([k, u]) => [
      k,
      Object.fromEntries(USE_FIELDS.map((f) => [f, u[f] * a])) as unknown as Use,
    ]),
  );

const sumUse = (...uses: UseByResource[]): UseByResource => {
  const out: UseByResource = {};
  for (const use of uses)
    for (const [k, u] of Object.entries(use)) {
      out[k] ??= { readUnits: 0, writeUnits: 0, readRequests: 0, writeRequests: 0 };
      for (const f of USE_FIELDS) out[k]![f] += u[f];
    }
  return out;
};

/**
 * The transport-hold gate's reads per second (lib/dispatch/gateReads.ts `admit` → lib/rate/TransportHolds.ts
 * `check`): a strongly consistent GetItem of `hold#<transport>` before each provider call, which a clear
 * answer caches per process for `refreshMs`. So it is paid per dispatcher environment, per transport, per
 * refresh — `readsPerRefresh` reads each (every record that checks while the cache is stale reads; measured)
 * — not per record; an environment that sees fewer records than refreshes reads once per record at most.
 * Email and SMS are one transport each, or one between them (`transports: shared`, the harness's simulator).
 */
export const holdGateReads = (
  costs: CapacityCosts,
  d: Deployment,
  deliveriesPerSecond: number,
  n: Pick<NotificationCost, 'emailShare' | 'smsShare'>,
  environments: number,
): number => {
  const hold = costs.holdCheck;
  if (!hold) return 0;
  const streams =
    d.transports === 'shared'
      ? [deliveriesPerSecond]
      : [deliveriesPerSecond * n.emailShare, deliveriesPerSecond * n.smsShare];
  const refreshesPerEnvironment = 1000 / hold.refreshMs;
  return streams
    .filter((records) => records > 0)
    .reduce((sum, records) => {
      const refreshes = Math.min(records, environments * refreshesPerEnvironment);
      return sum + Math.min(records, refreshes * hold.readsPerRefresh);
    }, 0);
};

// ── the model at one rate ──────────────────────────────────────────────────────────────────────────

export interface FunctionLoad {
  fn: 'dispatch' | 'evidence' | 'reconcile' | 'archive';
  invocationsPerSecond: number;
  /** Mean wall time of one invocation (ms). */
  durationMs: number;
  /** Little's law: invocations per second × duration. */
  concurrency: number;
  memoryMb: number;
}

export interface HotKey {
  key: string;
  what: string;
  writeUnitsPerSecond: number;
  readUnitsPerSecond: number;
}

export interface Limit {
  id: string;
  what: string;
  demand: number;
  capacity: number;
  unit: string;
  utilization: number;
  moves: string;
  source: string;
}

export interface ModelAtRate {
  rate: number;
  perNotification: NotificationCost;
  recordsPerBatch: number;
  /** DynamoDB per resource (`ledger`, `ledger/attention`, `suppression`), all functions. */
  dynamo: UseByResource;
  byFunction: Record<'dispatch' | 'evidence' | 'reconcile' | 'pacing', UseByResource>;
  lambda: FunctionLoad[];
  sqs: {
    publish: number;
    receive: number;
    delete: number;
    changeVisibility: number;
    sendMessage: number;
    idleReceives: number;
    evidenceQueue: number;
  };
  s3Puts: number;
  reconcile: {
    runsPerSecond: number;
    rowsPerRun: number;
    pagesPerRun: number;
    stepFunctionsTransitionsPerSecond: number;
  };
  providers: { emailsPerSecond: number; smsPartsPerSecond: Record<string, number> };
  hotKeys: HotKey[];
  limits: Limit[];
  costPerMonth: { items: Partial<Record<CostItem, number>>; total: number; sesFees: number };
}

export interface ModelOptions {
  /** Reconcile runs per second, when a run's schedule is known exactly (the validation); else 1 / period. */
  runsPerSecond?: number;
}

export const modelAt = (
  costs: CapacityCosts,
  mix: Mix,
  rate: number,
  options: ModelOptions = {},
): ModelAtRate => {
  const d = mix.deployment;
  const lambda = d.lambda;
  const n = perNotification(costs, mix, d);
  const dispatchMs = lambda.dispatchMs ?? costs.dispatchMs;

  // Dispatch: deliveries, batches, Little's law. First deliveries arrive as the publisher sent them (a
  // SendMessageBatch of publishBatchSize lands together); redeliveries and resumes come back one by one.
  const deliveries = rate * n.deliveries;
  const first = rate;
  const again = Math.max(0, deliveries - first);
  const busy = recordsPerBatch(deliveries, lambda, dispatchMs);
  const firstPerBatch = Math.min(lambda.batchSize, Math.max(d.publishBatchSize, busy));
  const invocations = first / firstPerBatch + again / busy;
  const b = invocations > 0 ? deliveries / invocations : 1;
  const dispatchDurationMs = lambda.pollOverheadMs + Math.ceil(b / lambda.recordConcurrency) * dispatchMs;
  const dispatchConcurrency = (invocations * dispatchDurationMs) / 1000;
  const holdReads = holdGateReads(costs, d, deliveries, n, Math.max(1, dispatchConcurrency));
  const dispatchUse = sumUse(scaleUse(n.dispatch, rate), scaleUse(costs.perBatch, invocations), {
    ledger: {
      readUnits: holdReads * (costs.holdCheck?.readUnitsPerRead ?? 0),
      writeUnits: 0,
      readRequests: holdReads,
      writeRequests: 0,
    },
  });

  // Reconcile: the fixed run, the rows it visits, the pages they take.
  const runsPerSecond = options.runsPerSecond ?? 1 / d.reconcile.periodSeconds;
  const period = 1 / runsPerSecond;
  const waitingVisits = rate * mix.rates.unknown * d.reconcile.unknownWaitRuns;
  const rowsPerRun = (rate * n.reconcileRows + waitingVisits) * period;
  const pagesPerRun = Math.min(
    d.reconcile.maxPagesPerRun,
    Math.max(costs.perRun.invocations, Math.ceil(rowsPerRun / d.reconcile.pageSize)),
  );
  const reconcileUse = sumUse(scaleUse(costs.perRun.use, runsPerSecond), scaleUse(n.reconcile, rate), {
    'ledger/attention': {
      readUnits: waitingVisits * costs.reconcileReadUnitsPerRow,
      writeUnits: 0,
      readRequests: 0,
      writeRequests: 0,
    },
  });
  const reconcileInvocations = pagesPerRun * runsPerSecond;

  // Evidence (pushed events), archive.
  const evidenceEvents = d.evidence === 'push' ? rate * n.events : 0;
  const invocationsPerEvent = d.evidenceBatchSize
    ? 1 / d.evidenceBatchSize
    : costs.evidencePush.invocationsPerEvent;
  const evidenceInvocations = evidenceEvents * invocationsPerEvent;
  const evidenceUse = scaleUse(n.evidence, rate);
  const s3Puts = (rate * n.transitions) / costs.archive.transitionsPerObject;

  // Pacing: the active slot item of each paced channel.
  const environments = Math.max(1, dispatchConcurrency);
  const perEnvSlot = costs.pacing?.writesPerEnvironmentPerSlot ?? 1;
  const hotKeys: HotKey[] = [];
  const pacingUse: UseByResource = {};
  const limits: Limit[] = [];
  const channelRate = { email: rate * n.emailShare, sms: rate * n.smsShare };
  for (const channel of ['email', 'sms'] as const) {
    const pace = d.pacing[channel];
    if (!pace || channelRate[channel] === 0) continue;
    const slotSeconds = pace.slotMs / 1000;
    const writesPerSlot = Math.min(environments * perEnvSlot, Math.max(1, pace.perSecond * slotSeconds));
    const wcu = writesPerSlot / slotSeconds;
    hotKeys.push({
      key: `rate#transport#<${channel}>#<slot>`,
      what: `the ${channel} pace's active slot item`,
      writeUnitsPerSecond: wcu,
      readUnitsPerSecond: 0,
    });
    pacingUse.ledger = sumUse(pacingUse, {
      ledger: { readUnits: 0, writeUnits: wcu, readRequests: 0, writeRequests: wcu },
    }).ledger!;
    limits.push({
      id: `pace.${channel}`,
      what: `the ${channel} pace (SENDPROOF_RATE_LIMITS)`,
      demand: channelRate[channel],
      capacity: pace.perSecond,
      unit: 'sends/s',
      utilization: channelRate[channel] / pace.perSecond,
      moves:
        'raise the pace with the provider quota; beyond it sends wait in retry_wait (paced), none are lost',
      source: 'deployment',
    });
  }
  if (d.tenantQuotaPerMinute) {
    const top = rate * mix.tenants.topShare * 60;
    limits.push({
      id: 'tenant.quota',
      what: `the largest tenant (${(mix.tenants.topShare * 100).toFixed(0)} % of traffic) against its per-minute quota`,
      demand: top,
      capacity: d.tenantQuotaPerMinute,
      unit: 'sends/min',
      utilization: top / d.tenantQuotaPerMinute,
      moves:
        'raise that tenant’s perMinute; beyond it its sends wait (paced), other tenants are not held back',
      source: 'deployment',
    });
    hotKeys.push({
      key: 'rate#tenant#<top tenant>#<minute>',
      what: 'the largest tenant’s quota slot item',
      writeUnitsPerSecond: Math.min(environments * perEnvSlot, d.tenantQuotaPerMinute) / 60,
      readUnitsPerSecond: 0,
    });
  }

  // Spend breakers: one counter item per purpose and country; every counted SMS writes it.
  const breakerWcuPerSms = Math.max(
    0,
    (costs.scenarios.sms.dispatch.ledger?.writeUnits ?? 0) -
      (costs.scenarios.email.dispatch.ledger?.writeUnits ?? 0),
  );
  for (const p of mix.purposes) {
    if (!p.smsSpendBreaker) continue;
    for (const [country, share] of Object.entries(mix.smsCountries)) {
      const sms = rate * p.share * (p.channels.sms ?? 0) * share;
      if (sms === 0) continue;
      hotKeys.push({
        key: `brk#${p.purpose}#${country}`,
        what: `the ${p.purpose} spend breaker for ${country}`,
        writeUnitsPerSecond: sms * breakerWcuPerSms,
        readUnitsPerSecond: 0,
      });
    }
  }

  // The attention index: each state's partitions are its shards.
  const attentionWrites = Object.values(n.attentionWritesByState).reduce((a, x) => a + x, 0);
  const left = n.attentionWritesByState.left ?? 0;
  const entering = attentionWrites - left;
  const attentionReads = (reconcileUse['ledger/attention']?.readUnits ?? 0) / (d.attentionShards + 1);
  for (const [state, units] of Object.entries(n.attentionWritesByState)) {
    if (state === 'left' || units === 0) continue;
    const withLeaving = units + (entering > 0 ? (left * units) / entering : 0);
    hotKeys.push({
      key: `attention ${state}#<0..${d.attentionShards - 1}>`,
      what: `one of the ${d.attentionShards} attention-index shards of ${state}`,
      writeUnitsPerSecond: (rate * withLeaving) / d.attentionShards,
      readUnitsPerSecond: attentionReads,
    });
  }

  const dynamo = sumUse(dispatchUse, reconcileUse, evidenceUse, pacingUse);

  // Lambda.
  // Each event takes evidenceMs of an invocation, whatever the batching.
  const evidenceConcurrency = (evidenceEvents * lambda.evidenceMs) / 1000;
  const reconcileConcurrency = (reconcileInvocations * costs.reconcileMsPerInvocation) / 1000;
  const functions: FunctionLoad[] = [
    {
      fn: 'dispatch',
      invocationsPerSecond: invocations,
      durationMs: dispatchDurationMs,
      concurrency: dispatchConcurrency,
      memoryMb: lambda.dispatcherMemoryMb,
    },
    {
      fn: 'evidence',
      invocationsPerSecond: evidenceInvocations,
      durationMs: invocationsPerEvent > 0 ? lambda.evidenceMs / invocationsPerEvent : 0,
      concurrency: evidenceConcurrency,
      memoryMb: lambda.evidenceMemoryMb,
    },
    {
      fn: 'reconcile',
      invocationsPerSecond: reconcileInvocations,
      durationMs: costs.reconcileMsPerInvocation,
      concurrency: reconcileConcurrency,
      memoryMb: lambda.reconcileMemoryMb,
    },
    { fn: 'archive', invocationsPerSecond: s3Puts, durationMs: 0, concurrency: 0, memoryMb: 512 },
  ];

  // Providers.
  const emailsPerSecond = channelRate.email * (n.providerRequests || 1);
  const smsPartsPerSecond = Object.fromEntries(
    Object.entries(mix.smsCountries).map(([c, share]) => [
      c,
      channelRate.sms * share * (n.providerRequests || 1) * d.accounts.smsPartsPerMessage,
    ]),
  );

  // Limits.
  const tableLimit = (resource: string, what: string) => {
    const use = dynamo[resource];
    if (!use) return;
    for (const [kind, units] of [
      ['write', use.writeUnits],
      ['read', use.readUnits],
    ] as const)
      limits.push({
        id: `table.${resource}.${kind}`,
        what: `${what}, ${kind} request units`,
        demand: units,
        capacity: LIMITS.tableRequestUnits,
        unit: `${kind === 'write' ? 'WRU' : 'RRU'}/s`,
        utilization: units / LIMITS.tableRequestUnits,
        moves: 'a quota increase (Service Quotas), or fewer units per notification',
        source: LIMITS.source.table,
      });
  };
  tableLimit('ledger', 'the ledger table (on-demand table quota)');
  tableLimit('ledger/attention', 'the attention index (counted like a table)');
  tableLimit('suppression', 'the suppression table');
  for (const hot of hotKeys) {
    const moves = hot.key.startsWith('brk#')
      ? 'a code change: split the counter over N items of maxSends / N, or count in reservations per environment as the pacer does'
      : hot.key.startsWith('rate#')
        ? 'a longer slotMs (fewer slots per second) or a lower dispatcherMaxConcurrency (fewer environments reserving)'
        : 'more attentionShards (CDK attentionShards, at most 64; it may grow, never shrink)';
    limits.push({
      id: `partition.${hot.key}`,
      what: `${hot.what}: one partition's write units`,
      demand: hot.writeUnitsPerSecond,
      capacity: LIMITS.partitionWcu,
      unit: 'WCU/s',
      utilization: hot.writeUnitsPerSecond / LIMITS.partitionWcu,
      moves,
      source: LIMITS.source.partition,
    });
    if (hot.readUnitsPerSecond > 0)
      limits.push({
        id: `partition-read.${hot.key}`,
        what: `${hot.what}: one partition's read units`,
        demand: hot.readUnitsPerSecond,
        capacity: LIMITS.partitionRcu,
        unit: 'RCU/s',
        utilization: hot.readUnitsPerSecond / LIMITS.partitionRcu,
        moves,
        source: LIMITS.source.partition,
      });
  }
  const totalConcurrency = functions.reduce((s, f) => s + f.concurrency, 0);
  limits.push({
    id: 'lambda.account',
    what: 'the account’s Lambda concurrency (all Sendproof functions)',
    demand: totalConcurrency,
    capacity: lambda.accountConcurrency,
    unit: 'concurrent executions',
    utilization: totalConcurrency / lambda.accountConcurrency,
    moves:
      'a quota increase, a higher recordConcurrency (more records at once per environment), a shorter dispatch time',
    source: LIMITS.source.lambda,
  });
  limits.push({
    id: 'lambda.dispatchEventSource',
    what: 'the dispatcher’s SQS event source (concurrent batches)',
    demand: dispatchConcurrency,
    capacity: lambda.dispatcherMaxConcurrency,
    unit: 'concurrent batches',
    utilization: dispatchConcurrency / lambda.dispatcherMaxConcurrency,
    moves:
      'a higher recordConcurrency (the event source stops at 1,000 concurrent batches); a larger batchSize only fills batches',
    source: LIMITS.source.sqsEventSource,
  });
  const reconcileCapacity = d.reconcile.maxPagesPerRun * d.reconcile.pageSize;
  limits.push({
    id: 'reconcile.rowsPerRun',
    what: 'the reconcile run’s page budget (rows it can visit per run)',
    demand: rowsPerRun,
    capacity: reconcileCapacity,
    unit: 'rows/run',
    utilization: rowsPerRun / reconcileCapacity,
    moves:
      'reconcileMaxPagesPerRun, a shorter reconcileSchedule, or a larger page; beyond it the backlog of unknown rows grows run after run',
    source: 'deployment (infra/constructs/ReconcilerWorkflow.ts)',
  });
  if (d.accounts.sesMaxSendRate)
    limits.push({
      id: 'provider.ses',
      what: 'the SES account’s maximum send rate',
      demand: emailsPerSecond,
      capacity: d.accounts.sesMaxSendRate,
      unit: 'emails/s',
      utilization: emailsPerSecond / d.accounts.sesMaxSendRate,
      moves: 'an SES sending-quota increase; meanwhile pace email at the quota (SENDPROOF_RATE_LIMITS)',
      source: LIMITS.source.ses,
    });
  for (const [country, parts] of Object.entries(smsPartsPerSecond)) {
    const mps = d.accounts.smsPartsPerSecond[country];
    if (!mps) continue;
    limits.push({
      id: `provider.sms.${country}`,
      what: `SMS parts per second to ${country} (origination identities)`,
      demand: parts,
      capacity: mps,
      unit: 'parts/s',
      utilization: parts / mps,
      moves: 'more origination identities (a pool), or one with a higher MPS (a short code)',
      source: LIMITS.source.sms,
    });
  }

  // Dollars per month, at the bench's dated on-demand prices (bench/prices.ts).
  const sqs = {
    publish: rate / d.publishBatchSize,
    receive: invocations,
    delete: invocations,
    changeVisibility: rate * n.sqs.changeVisibility,
    sendMessage: rate * n.sqs.sendMessage,
    idleReceives: lambda.pollers / 20,
    evidenceQueue: evidenceEvents * costs.evidencePush.sqsRequestsPerEvent,
  };
  const stepFunctionsTransitionsPerSecond = runsPerSecond * (4 + 2 * Math.max(0, pagesPerRun - 1));
  // The capacity model prices what it models; logs, metrics, traces and outcome events are the cost
  // phase's (bench/cost.ts), not repeated here.
  const perSecondUnits: Partial<Record<CostItem, number>> = {
    dynamoWriteUnit: Object.values(dynamo).reduce((s, u) => s + u.writeUnits, 0),
    dynamoReadUnit: Object.values(dynamo).reduce((s, u) => s + u.readUnits, 0),
    s3Put: s3Puts,
    s3Get: 0,
    sqsRequest: Object.values(sqs).reduce((s, x) => s + x, 0),
    lambdaRequest: functions.reduce((s, f) => s + f.invocationsPerSecond, 0),
    lambdaGbSecond: functions.reduce((s, f) => s + (f.concurrency * f.memoryMb) / 1024, 0),
    // Each parked write is a seal written or opened: one KMS call (GenerateDataKey or Decrypt).
    kmsRequest: rate * (n.attentionWritesByState.parked ?? 0),
    stepFunctionsTransition: stepFunctionsTransitionsPerSecond,
    schedulerInvocation: runsPerSecond,
  };
  const items = Object.fromEntries(
    (Object.keys(perSecondUnits) as CostItem[]).map((k) => [
      k,
      (perSecondUnits[k] ?? 0) * PRICES.items[k].usd * SECONDS_PER_MONTH,
    ]),
  ) as Partial<Record<CostItem, number>>;

  return {
    rate,
    perNotification: n,
    recordsPerBatch: b,
    dynamo,
    byFunction: { dispatch: dispatchUse, evidence: evidenceUse, reconcile: reconcileUse, pacing: pacingUse },
    lambda: functions,
    sqs,
    s3Puts,
    reconcile: { runsPerSecond, rowsPerRun, pagesPerRun, stepFunctionsTransitionsPerSecond },
    providers: { emailsPerSecond, smsPartsPerSecond },
    hotKeys,
    limits,
    costPerMonth: {
      items,
      total: Object.values(items).reduce((a, x) => a + x, 0),
      sesFees: emailsPerSecond * SECONDS_PER_MONTH * PRICES.references.sesEmail.usd,
    },
  };
};

// ── where each limit is hit ────────────────────────────────────────────────────────────────────────

export interface LimitAt extends Limit {
  /** The lowest rate (notifications/s) at which this limit is reached; Infinity when it never is. */
  hitsAtRate: number;
}

const MAX_RATE = 1e8;

/** The rate at which a limit's utilization reaches 1 (bisection over the model itself). */
export const rateAtLimit = (costs: CapacityCosts, mix: Mix, id: string): number => {
  const util = (rate: number) => modelAt(costs, mix, rate).limits.find((l) => l.id === id)?.utilization ?? 0;
  if (util(MAX_RATE) < 1) return Number.POSITIVE_INFINITY;
  let lo = 0;
  let hi = MAX_RATE;
  for (let i = 0; i < 200 && hi - lo > Math.max(1e-9, lo * 1e-12); i++) {
    const mid = (lo + hi) / 2;
    if (util(mid) >= 1) hi = mid;
    else lo = mid;
  }
  return hi;
};

export interface CapacityReport {
  model: ModelAtRate;
  limits: LimitAt[];
  /** The limit the design reaches first as traffic grows (lowest hitsAtRate). */
  firstLimit: LimitAt | undefined;
  /** Settings that move the first limit, and where it is then reached. */
  firstLimitMoves: Move[];
}

export const capacityReport = (costs: CapacityCosts, mix: Mix, rate: number): CapacityReport => {
  const model = modelAt(costs, mix, rate);
  const limits = model.limits
    .map((l) => ({ ...l, hitsAtRate: rateAtLimit(costs, mix, l.id) }))
    .sort((a, b) => a.hitsAtRate - b.hitsAtRate || b.utilization - a.utilization);
  const firstLimit = limits.find((l) => Number.isFinite(l.hitsAtRate));
  return {
    model,
    limits,
    firstLimit,
    firstLimitMoves: firstLimit ? movesFor(costs, mix, firstLimit.id) : [],
  };
};

// ── a run of known size (the validation) ───────────────────────────────────────────────────────────

export interface RunTotals {
  dispatch: UseByResource;
  reconcile: UseByResource;
  dispatchInvocations: number;
  reconcileInvocations: number;
  sqs: { receive: number; delete: number; changeVisibility: number; sendMessage: number };
  providerRequests: number;
}

/**
 * What the model predicts for `notifications` published at `rate` with `runs` reconcile runs: the same
 * arithmetic as `modelAt`, totalled (per-notification parts × notifications, per-run parts × runs).
 */
export const modelRun = (
  costs: CapacityCosts,
  mix: Mix,
  run: { notifications: number; rate: number; runs: number },
): RunTotals => {
  const seconds = run.notifications / run.rate;
  const at = modelAt(costs, mix, run.rate, { runsPerSecond: run.runs / seconds });
  const total = (x: number) => x * seconds;
  const totalUse = (u: UseByResource) => scaleUse(u, seconds);
  return {
    dispatch: totalUse(at.byFunction.dispatch),
    reconcile: totalUse(at.byFunction.reconcile),
    dispatchInvocations: total(at.lambda.find((f) => f.fn === 'dispatch')!.invocationsPerSecond),
    reconcileInvocations: total(at.reconcile.pagesPerRun * at.reconcile.runsPerSecond),
    sqs: {
      receive: total(at.sqs.receive),
      delete: total(at.sqs.delete),
      changeVisibility: total(at.sqs.changeVisibility),
      sendMessage: total(at.sqs.sendMessage),
    },
    providerRequests: run.notifications * at.perNotification.providerRequests,
  };
};

// ── what configuration moves a limit ───────────────────────────────────────────────────────────────

export interface Move {
  setting: string;
  /** Where the same limit is reached with the setting. */
  hitsAtRate: number;
}

type Variant = { setting: string; deployment: Mix['deployment'] };

const variantsFor = (mix: Mix, id: string): Variant[] => {
  const d = mix.deployment;
  if (id === 'reconcile.rowsPerRun')
    return [100, 200, 500, 1_000].flatMap((pages) =>
      [d.reconcile.periodSeconds, 60].map((period) => ({
        setting: `reconcileMaxPagesPerRun ${pages}${period !== d.reconcile.periodSeconds ? `, a ${period} s reconcileSchedule` : ''}`,
        deployment: { ...d, reconcile: { ...d.reconcile, maxPagesPerRun: pages, periodSeconds: period } },
      })),
    );
  if (id.startsWith('partition.attention') || id.startsWith('partition-read.attention'))
    return [8, 16, 32, 64]
      .filter((n) => n > d.attentionShards)
      .map((n) => ({ setting: `attentionShards ${n}`, deployment: { ...d, attentionShards: n } }));
  if (id === 'lambda.account' || id === 'lambda.dispatchEventSource')
    return [10, 20, 50]
      .filter((n) => n > d.lambda.recordConcurrency)
      .map((n) => ({
        setting: `recordConcurrency ${n}`,
        deployment: { ...d, lambda: { ...d.lambda, recordConcurrency: n } },
      }));
  if (id.startsWith('partition.rate#'))
    return [1_000]
      .filter((ms) => Object.values(d.pacing).some((p) => p && p.slotMs < ms))
      .map((ms) => ({
        setting: `slotMs ${ms}`,
        deployment: {
          ...d,
          pacing: Object.fromEntries(
            Object.entries(d.pacing).map(([c, p]) => [c, p ? { ...p, slotMs: ms } : p]),
          ),
        },
      }));
  return [];
};

/**
 * Deployment settings that move a limit, each with the rate at which the same limit is then reached
 * (the model run again with the setting). Empty for limits no Sendproof setting moves (account quotas,
 * the breaker's single counter: a code change).
 */
export const movesFor = (costs: CapacityCosts, mix: Mix, id: string): Move[] =>
  variantsFor(mix, id).map((v) => ({
    setting: v.setting,
    hitsAtRate: rateAtLimit(costs, { ...mix, deployment: v.deployment }, id),
  }));
