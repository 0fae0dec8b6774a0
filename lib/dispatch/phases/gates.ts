import { replayWindowOpen } from '../../domain/replay.js';
import { isReplay } from '../../domain/resume.js';
import type { DeliveryRecord } from '../../ledger/port.js';
import { METRIC } from '../../observability.js';
import { admit, fetchAttachments, freshSuppressionOf } from '../gateReads.js';
import { chooseProvider, skipWhy } from '../providers.js';
import { type ChannelRun, done, leaveUnknown, move, providerHolds, type Step, ttlFor } from '../run.js';
import { afterDispatching } from './confirm.js';
import { pace } from './wait.js';

/**
 * gates: before every retry or resume of an existing row — expiry → suppression → attachment checksums →
 * admission → expiry again → the provider's key window for a replay → the durable `dispatching` write.
 * A gate that refuses writes its final state (a replay's refusal leaves the row `unknown` instead: it
 * asks about a send that may have happened).
 */
export const gates = async (run: ChannelRun, input: DeliveryRecord): Promise<Step> => {
  const { ctx } = run;
  let row = input;
  const replay = isReplay(row);
  // The provider for this attempt: a replay's holder, else the row's provider unless its circuit is open.
  const before = run.transport.name;
  await chooseProvider(run, row);
  if (run.admitted && run.transport.name !== before) {
    // Admitted (paced) for another provider before the claim: its tokens go back, this one's are taken.
    ctx.admission?.refund(run.ticket);
    run.admitted = false;
    delete run.ticket;
  }
  // Gate: expiry, against the current clock (and again below, with no I/O after it).
  const expiredEarly = await expireIfDue(run, row);
  if (expiredEarly) return expiredEarly;
  // Gate: suppression list, read again before every retry or resume.
  const suppression = await freshSuppressionOf(run);
  if (suppression.suppressed) {
    // A replay is a question about a send that may have happened: the row stays for the reconciler.
    if (replay) return leaveUnknown(run, row, 'replay_refused:suppressed');
    row = await move(ctx, row, 'suppressed', `suppressed:${suppression.reason ?? 'listed'}`, {
      ttl: ttlFor(run, ctx.clock.now()),
    });
    ctx.metrics?.count(METRIC.suppressed);
    return done(row, 'suppressed');
  }
  // Gate: attachments by immutable reference, checksum verified before anything leaves.
  const checksum = await fetchAttachments(run);
  if (checksum) {
    if (replay) return leaveUnknown(run, row, `replay_refused:${checksum}`);
    row = await move(ctx, row, 'blocked', checksum, { ttl: ttlFor(run, ctx.clock.now()) });
    ctx.metrics?.count(METRIC.blocked);
    return done(row, 'blocked');
  }
  // Rate control and SMS rules (not for a replay: it asks about a send that may have happened).
  if (!replay && !run.admitted) {
    const admitted = await admit(run);
    if (admitted.kind === 'wait') return pace(run, row, admitted.until, admitted.why);
    if (admitted.kind === 'refuse') {
      row = await move(ctx, row, 'blocked', admitted.why, { ttl: ttlFor(run, ctx.clock.now()) });
      ctx.metrics?.count(METRIC.blocked);
      return done(row, 'blocked');
    }
  }
  // Expiry once more, and for a replay the provider's key window, with no I/O left before the write:
  // the reads above can take seconds.
  const expiredLate = await expireIfDue(run, row);
  if (expiredLate) return expiredLate;
  const early = await holdUntilSendAt(run, row);
  if (early) return early;
  const now = ctx.clock.now();
  if (replay && !replayWindowOpen(row, run.transport, now)) {
    if (row.state === 'retry_wait') row = await move(ctx, row, 'unknown', 'replay_window_closed');
    return done(row, 'left_for_reconciler');
  }
  // Durable `dispatching` first; only then the provider call. A replay spends no attempt.
  const attempts = replay ? row.attempts : row.attempts + 1;
  const why = replay ? 'replay_under_enforced_key' : skipWhy(run, attempts === 1 ? 'gates_passed' : 'retry');
  row = await move(ctx, row, 'dispatching', why, {
    attempts,
    transport: run.transport.name,
    leaseOwner: ctx.workerId,
    leaseUntil: now + ctx.leaseMs,
  });
  return afterDispatching(run, row);
};

/** `expired` when the intent's expiry has passed by the clock now; a replayed row stays for the reconciler. */
const expireIfDue = async (run: ChannelRun, row: DeliveryRecord): Promise<Step | undefined> => {
  const now = run.ctx.clock.now();
  if (row.expiresAt === undefined || now < row.expiresAt) return undefined;
  if (isReplay(row)) return leaveUnknown(run, row, 'replay_refused:expired');
  const expired = await move(run.ctx, row, 'expired', 'expired_before_dispatch', { ttl: ttlFor(run, now) });
  run.ctx.metrics?.count(METRIC.expired);
  return done(expired, 'expired');
};

/**
 * A retry of a provider-scheduled send whose sendAt is now too close for the provider's window (a
 * Retry-After ate the lead time): never send early; wait in the ledger until sendAt, then send plainly.
 */
const holdUntilSendAt = async (run: ChannelRun, row: DeliveryRecord): Promise<Step | undefined> => {
  const now = run.ctx.clock.now();
  const sendAt = run.job.valid.sendAtMs;
  if (row.state !== 'retry_wait' || sendAt === undefined || sendAt <= now || providerHolds(run, now))
    return undefined;
  const waiting = await move(run.ctx, row, 'retry_wait', 'waits_for_send_at', { nextAttemptAt: sendAt });
  return { next: 'wait', row: waiting, delayMs: sendAt - now };
};
