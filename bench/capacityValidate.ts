import { performance } from 'node:perf_hooks';
import {
  destinationOf,
  emailBody,
  FAULTS,
  mergeUse,
  receiptBody,
  SEAL_DRAIN_MS,
  smsBody,
} from './capacityCosts.js';
import type { CapacityCosts } from './capacityInputs.js';
import type { Mix } from './capacityMix.js';
import { modelRun } from './capacityModel.js';
import type { Pipeline, PipelineSnapshot } from './capacityPipeline.js';
import type { UseByResource } from './capacityProxy.js';

/**
 * The capacity model against the real pipeline (bench/capacityPipeline.ts) at a rate this machine can
 * run: the mix's notifications published evenly at `rate`, the reconcile schedule every `periodSeconds`,
 * then every DynamoDB unit per function, table and index, every invocation and SQS request counted and
 * printed beside what the model predicts for the same run from the benchmark's costs. Pass: every
 * quantity of at least `minimum` within `tolerance` (20 %).
 */

export interface ValidationRow {
  quantity: string;
  predicted: number;
  measured: number;
  /** |predicted − measured| ÷ measured (0 when both are 0). */
  deviation: number;
  /** Held to the tolerance (measured at least `minimum`). */
  held: boolean;
  ok: boolean;
}

export interface ValidationResult {
  measuredAt: string;
  mix: string;
  rate: number;
  notifications: number;
  publishSeconds: number;
  reconcileRuns: number;
  periodSeconds: number;
  tolerance: number;
  minimum: number;
  rows: ValidationRow[];
  passed: boolean;
  /** The inputs the prediction used. */
  costsSource: CapacityCosts['source'];
}

/**
 * The mix as this harness runs it: events pulled by the reconcile run (the simulator's REST feed), intents
 * published 10 per SendMessageBatch, the harness's pollers, its schedule; every SMS counted by a spend breaker
 * (the pipeline's resets carry one); one transport (the simulator's `rest`) for email and SMS. Pacing and
 * tenant quotas are not configured here.
 */
export const validationMix = (mix: Mix, options: { periodSeconds: number; pollers: number }): Mix => {
  for (const p of mix.purposes)
    if (p.cancellable && (p.channels.sms ?? 0) > 0)
      throw new Error(
        `validation: purpose ${p.purpose} is cancellable and sends SMS; the harness has no cancellable SMS template`,
      );
  const { tenantQuotaPerMinute: _quota, ...deployment } = mix.deployment;
  return {
    ...mix,
    purposes: mix.purposes.map((p) => ({ ...p, smsSpendBreaker: (p.channels.sms ?? 0) > 0 })),
    deployment: {
      ...deployment,
      evidence: 'pull',
      transports: 'shared',
      publishBatchSize: 10,
      pacing: {},
      lambda: { ...mix.deployment.lambda, pollers: options.pollers, batchSize: 10 },
      reconcile: { ...mix.deployment.reconcile, periodSeconds: options.periodSeconds, unknownWaitRuns: 0 },
    },
  };
};

type Kind = 'email' | 'receipt' | 'sms';

/** Counts that add up to `total` in proportion to `weights` (largest remainder). */
export const apportion = (total: number, weights: readonly number[]): number[] => {
  const sum = weights.reduce((a, b) => a + b, 0) || 1;
  const exact = weights.map((w) => (total * w) / sum);
  const counts = exact.map(Math.floor);
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0]);
  for (let k = 0; k < total - counts.reduce((a, b) => a + b, 0); k++) counts[order[k]![1]]! += 1;
  return counts;
};

/** Items of each group spread evenly through one sequence (each at (i + ½) / count of its group). */
const interleave = <T>(groups: T[][]): T[] =>
  groups
    .flatMap((g) => g.map((item, i) => ({ item, at: (i + 0.5) / g.length })))
    .sort((a, b) => a.at - b.at)
    .map((x) => x.item);

/** The notifications of a validation run: the mix apportioned exactly, faults on email notifications. */
export const validationBodies = (mix: Mix, notifications: number, tag: string) => {
  const slots = mix.purposes.flatMap((p) =>
    (['email', 'sms'] as const).map((channel) => ({
      kind: (channel === 'sms' ? 'sms' : p.cancellable ? 'receipt' : 'email') as Kind,
      weight: p.share * (p.channels[channel] ?? 0),
    })),
  );
  const counts = apportion(
    notifications,
    slots.map((s) => s.weight),
  );
  let n = 0;
  let sms = 0;
  const groups = slots.map((slot, g) =>
    Array.from({ length: counts[g]! }, () => {
      const id = `val-${tag}-${n++}`;
      if (slot.kind === 'sms') {
        sms += 1;
        return { kind: slot.kind, body: smsBody(id, sms) };
      }
      return { kind: slot.kind, body: slot.kind === 'receipt' ? receiptBody(id) : emailBody(id) };
    }),
  );
  const ordered = interleave(groups);
  const emails = ordered.filter((o) => o.kind !== 'sms');
  const [retry, unknown, bounce] = apportion(
    Math.round(notifications * (mix.rates.retry + mix.rates.unknown + mix.rates.bounce)),
    [mix.rates.retry, mix.rates.unknown, mix.rates.bounce],
  );
  if (retry! + unknown! + bounce! > emails.length)
    throw new Error('validation: more faulted notifications than email notifications in this mix');
  const faulted = interleave([
    Array(retry).fill('retry'),
    Array(unknown).fill('unknown'),
    Array(bounce).fill('bounce'),
    Array(emails.length - retry! - unknown! - bounce!).fill(undefined),
  ]) as Array<'retry' | 'unknown' | 'bounce' | undefined>;
  const faults = emails.flatMap((e, i) => {
    const kind = faulted[i];
    return kind ? [FAULTS[kind]!(destinationOf(e.body))] : [];
  });
  return {
    bodies: ordered.map((o) => o.body),
    faults,
    counts: { retry: retry!, unknown: unknown!, bounce: bounce! },
  };
};

const sumField = (use: UseByResource, resource: string, field: 'readUnits' | 'writeUnits') =>
  use[resource]?.[field] ?? 0;
const requests = (use: UseByResource) =>
  Object.values(use).reduce((s, u) => s + u.readRequests + u.writeRequests, 0);

/** What one validation run measured, before anything is compared. */
export interface ValidationRun {
  mix: Mix;
  /** The mix as the harness ran it (validationMix). */
  ran: Mix;
  rate: number;
  notifications: number;
  publishSeconds: number;
  periodSeconds: number;
  snapshot: PipelineSnapshot;
}

export const runValidation = async (
  pipeline: Pipeline,
  mix: Mix,
  options: {
    rate: number;
    seconds: number;
    periodSeconds: number;
    pollers: number;
    progress?: (line: string) => void;
  },
): Promise<ValidationRun> => {
  const progress = options.progress ?? (() => undefined);
  const ran = validationMix(mix, options);
  const notifications = Math.max(1, Math.round(options.rate * options.seconds));
  const { bodies, faults, counts } = validationBodies(ran, notifications, Date.now().toString(36));
  pipeline.reset();
  for (const fault of faults) pipeline.simulator.addFault(fault);
  const keys = bodies.flatMap((b) => pipeline.keysOf(b));
  progress(
    `validation: ${notifications} notifications at ${options.rate}/s (${counts.retry} retried, ${counts.unknown} unknown, ${counts.bounce} bounced), reconcile every ${options.periodSeconds} s`,
  );
  const stop = pipeline.schedule(options.periodSeconds * 1000);
  const t0 = performance.now();
  let publishSeconds: number;
  try {
    await pipeline.publish(bodies, options.rate, ran.deployment.publishBatchSize);
    publishSeconds = (performance.now() - t0) / 1000;
    await pipeline.settle(keys, 300_000);
  } finally {
    await stop();
  }
  await pipeline.reconcileRun();
  // The sweep's release of every seal the run wrote, as the costs count it (bench/capacityCosts.ts).
  const left = await pipeline.drainSeals(SEAL_DRAIN_MS);
  if (left > 0) progress(`validation: ${left} seal(s) still held after ${SEAL_DRAIN_MS} ms`);
  return {
    mix,
    ran,
    rate: options.rate,
    notifications,
    publishSeconds,
    periodSeconds: options.periodSeconds,
    snapshot: pipeline.snapshot(),
  };
};

/** The model's prediction for the run, from `costs`, beside what the run measured. */
export const compareRun = (
  costs: CapacityCosts,
  run: ValidationRun,
  options: { tolerance?: number; minimum?: number } = {},
): ValidationResult => {
  const s = run.snapshot;
  const { notifications } = run;
  // The first publish goes out at once, each later batch 1/rate apart: the rate they arrived at.
  const predicted = modelRun(costs, run.ran, {
    notifications,
    rate: run.rate,
    runs: s.functions.reconcileRuns,
  });
  const measuredDispatch = mergeUse(s.dispatch.byResource, s.dispatch.batchGets);
  const measuredReconcile = mergeUse(s.reconcile.byResource, s.reconcile.batchGets);
  const tolerance = options.tolerance ?? 0.2;
  const minimum = options.minimum ?? 10;
  const row = (quantity: string, p: number, m: number): ValidationRow => {
    const deviation = m === 0 ? (p === 0 ? 0 : Number.POSITIVE_INFINITY) : Math.abs(p - m) / m;
    const held = m >= minimum;
    return { quantity, predicted: p, measured: m, deviation, held, ok: !held || deviation <= tolerance };
  };
  const rows: ValidationRow[] = [];
  for (const [fn, p, m] of [
    ['dispatch', predicted.dispatch, measuredDispatch],
    ['reconcile', predicted.reconcile, measuredReconcile],
  ] as const) {
    for (const resource of ['ledger', 'ledger/attention', 'suppression'])
      for (const field of ['writeUnits', 'readUnits'] as const) {
        const pv = sumField(p, resource, field);
        const mv = sumField(m, resource, field);
        if (pv === 0 && mv === 0) continue;
        rows.push(row(`${fn}: ${resource} ${field === 'writeUnits' ? 'WCU' : 'RCU'}`, pv, mv));
      }
    rows.push(row(`${fn}: DynamoDB requests`, requests(p), requests(m)));
  }
  rows.push(row('dispatch invocations', predicted.dispatchInvocations, s.functions.dispatchInvocations));
  rows.push(
    row('reconcile invocations (pages)', predicted.reconcileInvocations, s.functions.reconcileInvocations),
  );
  rows.push(row('SQS ReceiveMessage (non-empty)', predicted.sqs.receive, s.sqs.byAction.ReceiveMessage ?? 0));
  rows.push(row('SQS DeleteMessageBatch', predicted.sqs.delete, s.sqs.byAction.DeleteMessageBatch ?? 0));
  rows.push(
    row(
      'SQS ChangeMessageVisibility',
      predicted.sqs.changeVisibility,
      s.sqs.byAction.ChangeMessageVisibility ?? 0,
    ),
  );
  rows.push(row('SQS SendMessage (resumes)', predicted.sqs.sendMessage, s.sqs.byAction.SendMessage ?? 0));
  rows.push(row('provider requests', predicted.providerRequests, s.provider.requests));
  return {
    measuredAt: new Date().toISOString(),
    mix: run.mix.name,
    rate: run.rate,
    notifications,
    publishSeconds: Number(run.publishSeconds.toFixed(1)),
    reconcileRuns: s.functions.reconcileRuns,
    periodSeconds: run.periodSeconds,
    tolerance,
    minimum,
    rows,
    passed: rows.every((r) => r.ok),
    costsSource: costs.source,
  };
};
