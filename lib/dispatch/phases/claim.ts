import { retentionTtl } from '../../domain/purposes.js';
import { replayWindowOpen } from '../../domain/replay.js';
import { decideExisting, isUnsentAndIdle } from '../../domain/resume.js';
import { expireDispatchingLease } from '../../ledger/leases.js';
import type { DeliveryRecord } from '../../ledger/port.js';
import { boundWhy } from '../../ledger/why.js';
import { METRIC } from '../../observability.js';
import { buildClaimRecord, type ClaimInitial } from '../claimRecord.js';
import { park } from '../parking.js';
import { holderOf, skipWhy } from '../providers.js';
import {
  type ChannelRun,
  type DispatchContext,
  done,
  type GateVerdict,
  iso,
  type Job,
  move,
  type Step,
  ttlFor,
} from '../run.js';
import { recordMismatch } from '../sideRows.js';
import { afterDispatching, cancelHeld } from './confirm.js';
import { pace, parkForReplay } from './wait.js';

const GATE_METRIC = {
  expired: METRIC.expired,
  suppressed: METRIC.suppressed,
  blocked: METRIC.blocked,
} as const;

/**
 * claim: one conditional put. The row is created directly in `dispatching` (leased, attempt 1) when every
 * gate passed, or in the state a gate chose; a conflict hands over to the existing row's decision.
 */
export const claim = async (run: ChannelRun, verdict: GateVerdict): Promise<Step> => {
  const { ctx } = run;
  const now = ctx.clock.now();
  const initial = initialStateOf(verdict, run.transport.name, ttlFor(run, now), skipWhy(run, 'gates_passed'));
  const record = buildClaimRecord({
    valid: run.job.valid,
    channel: run.channel,
    contentHash: run.hash,
    templateOwner: run.rendered.owner,
    workerId: ctx.workerId,
    now,
    leaseMs: ctx.leaseMs,
    ...(initial ? { initial } : {}),
    ...(run.job.queueSentAt !== undefined ? { queueSentAt: run.job.queueSentAt } : {}),
  });
  const claimed = await ctx.ledger.claim(record);
  if (claimed.kind === 'claimed') {
    ctx.metrics?.count(METRIC.claims);
    if (verdict.kind === 'schedule') return done(claimed.record, 'scheduled');
    if (verdict.kind === 'dispatch') return afterDispatching(run, claimed.record);
    if (verdict.kind === 'pace') return pace(run, claimed.record, verdict.until, verdict.why);
    ctx.metrics?.count(GATE_METRIC[verdict.state]);
    return done(claimed.record, verdict.state);
  }
  ctx.metrics?.count(METRIC.claimConflicts);
  const step = await onExisting(run, claimed.existing);
  if ('done' in step)
    ctx.logger.info('claim conflict decided', {
      dedupeKey: run.dedupeKey,
      channel: run.channel,
      state: step.done.state,
      action: step.done.action,
    });
  return step;
};

/** The state a fresh claim is written in, from the read-only gates' verdict. */
const initialStateOf = (
  verdict: GateVerdict,
  transport: string,
  ttl: number,
  dispatchWhy: string,
): ClaimInitial | undefined => {
  switch (verdict.kind) {
    case 'pace':
      // Claimed (leased), then moved to `retry_wait` (paced): the claim is the dedupe, the wait spends nothing.
      return undefined;
    case 'dispatch':
      return { state: 'dispatching', why: dispatchWhy, transport };
    case 'schedule':
      return { state: 'scheduled', why: `scheduled_for:${iso(verdict.dueAt)}`, dueAt: verdict.dueAt };
    case 'refuse':
      return { state: verdict.state, why: verdict.why, ttl };
  }
};

/** A claim conflict never authorizes a send by itself: the existing row decides (lib/domain/resume.ts). */
const onExisting = async (run: ChannelRun, existing: DeliveryRecord): Promise<Step> => {
  const { ctx } = run;
  let row = existing;
  // The existing row's attempts are its provider's: its replay window is that provider's.
  run.transport = holderOf(ctx, row);
  for (let round = 0; round < 2; round += 1) {
    const now = ctx.clock.now();
    const decision = decideExisting(row, {
      sameContent: row.contentHash === run.hash,
      now,
      replayWindowOpen: replayWindowOpen(row, run.transport, now),
    });
    switch (decision.kind) {
      case 'final':
        return done(row, 'already_final');
      case 'busy':
        return done(row, 'retry_later', { dueAt: decision.until });
      case 'content_mismatch': {
        await recordMismatch(ctx, row, run.hash, run.job.valid, run.channel);
        ctx.metrics?.count(METRIC.blocked);
        // The row's own sealed intent no longer hashes to it (a rotated key): it can never be sent.
        if (run.job.resumed && isUnsentAndIdle(row, now))
          await blockUnsendable(ctx, run.job, row, 'content_mismatch:sealed_intent');
        return {
          done: {
            channel: run.channel,
            dedupeKey: row.pk,
            state: 'blocked',
            action: 'content_mismatch_blocked',
          },
        };
      }
      case 'take_over': {
        const takeover = await ctx.ledger.transition({
          pk: row.pk,
          from: row.state,
          to: 'claimed',
          expectedVersion: row.version,
          by: ctx.workerId,
          why: row.state === 'stalled' ? 'stalled_taken_over' : 'lease_takeover',
          ...(row.state === 'claimed' ? { leaseExpiredBefore: now } : {}),
          set: { leaseOwner: ctx.workerId, leaseUntil: now + ctx.leaseMs },
          now,
        });
        if (takeover.kind === 'ok') return { next: 'gates', row: takeover.record };
        return done(takeover.current ?? row, 'retry_later', { dueAt: now + ctx.leaseMs });
      }
      case 'mark_unknown': {
        const marked = await settleExpiredDispatching(ctx, row);
        if (!marked) return done(row, 'retry_later', { dueAt: now + ctx.leaseMs });
        // Decide again on the unknown row: a mismatch is still blocked, an open window still parks.
        const settled = await ctx.evidence?.applyRecordedEvidence(marked);
        if (settled) return done(settled, 'settled_by_recorded_evidence');
        row = marked;
        if (row.contentHash !== run.hash) continue;
        return parkForReplay(run, row, 'marked_unknown');
      }
      case 'wait':
        await park(ctx, run.job, 'retry_wait', decision.until + ctx.parkGraceMs);
        return done(row, 'retry_later', { dueAt: decision.until });
      case 'scheduled':
        // A duplicate publish (or a redelivery) of a scheduled intent: the seal owns it; nothing to do.
        await park(ctx, run.job, 'scheduled', decision.until);
        return done(row, 'scheduled');
      case 'held_by_provider':
        // A cancel the provider has not confirmed yet is asked again (cancellable purposes only).
        return (await cancelHeld(run, row)) ?? done(row, 'handed_to_provider_schedule');
      case 'resume':
        return { next: 'gates', row };
      case 'leave': {
        if (row.state === 'retry_wait') {
          // Unknown once, and the provider no longer remembers the key: no request may leave.
          const moved = await move(ctx, row, 'unknown', 'replay_window_closed');
          return done(moved, 'left_for_reconciler');
        }
        return done(row, 'left_for_reconciler');
      }
    }
  }
  return done(row, 'left_for_reconciler');
};

/**
 * The one `dispatching → unknown` rule for an expired lease (the reconciler and operator decisions
 * call the ledger the same way). Returns the unknown row, or undefined when another actor moved first.
 */
export const settleExpiredDispatching = async (
  ctx: DispatchContext,
  row: DeliveryRecord,
): Promise<DeliveryRecord | undefined> => {
  const now = ctx.clock.now();
  if (row.state !== 'dispatching' || (row.leaseUntil ?? 0) > now) return undefined;
  const result = await expireDispatchingLease(ctx.ledger, row, ctx.workerId, now);
  if (result.kind !== 'ok') return undefined;
  ctx.metrics?.count(METRIC.unknown);
  return result.record;
};

/**
 * Closes a row that never reached a provider and that its own intent can no longer send (see
 * `isUnsentAndIdle`, lib/domain/resume.ts): `blocked` with the reason, its TTL from now. A refused write
 * means another actor moved the row first; its write stands.
 */
export const blockUnsendable = async (
  ctx: DispatchContext,
  job: Job,
  row: DeliveryRecord,
  why: string,
): Promise<DeliveryRecord | undefined> => {
  const now = ctx.clock.now();
  const result = await ctx.ledger.transition({
    pk: row.pk,
    from: row.state,
    to: 'blocked',
    expectedVersion: row.version,
    by: ctx.workerId,
    why: boundWhy(why),
    ...(row.state === 'claimed' ? { leaseExpiredBefore: now } : {}),
    set: { ttl: retentionTtl(job.valid.policy, now) },
    now,
  });
  if (result.kind !== 'ok') return undefined;
  ctx.logger.warn('unsent row can no longer be sent; blocked', { dedupeKey: row.pk, why });
  return result.record;
};
