import { replayWindowOpen } from '../../domain/replay.js';
import type { DeliveryRecord } from '../../ledger/port.js';
import { park } from '../parking.js';
import { type ChannelRun, delayFor, done, move, type Step } from '../run.js';

/**
 * wait: a short wait is slept here, then every gate runs again before the next attempt (same key and
 * content); a long one is parked — sealed, and the message comes back when due.
 */
export const wait = async (run: ChannelRun, row: DeliveryRecord, delayMs: number): Promise<Step> => {
  const { ctx } = run;
  if (delayMs > ctx.inlineRetryBudgetMs) {
    const dueAt = row.nextAttemptAt ?? ctx.clock.now() + delayMs;
    await park(ctx, run.job, 'retry_wait', dueAt + ctx.parkGraceMs);
    return done(row, 'retry_later', { dueAt });
  }
  await ctx.sleep(delayMs);
  return { next: 'gates', row };
};

/**
 * An unknown row whose provider enforces the key: seal the intent and bring the message back after a
 * back-off to ask again. Without a replay window the reconciler and evidence settle it.
 */
export const parkForReplay = async (
  run: ChannelRun,
  row: DeliveryRecord,
  action: 'marked_unknown',
  delayMs = delayFor(run.ctx, row.attempts),
): Promise<Step> => {
  const { ctx } = run;
  const now = ctx.clock.now();
  if (!replayWindowOpen(row, run.transport, now)) return done(row, action);
  const dueAt = now + delayMs;
  await park(ctx, run.job, 'replay', dueAt + ctx.parkGraceMs);
  return done(row, 'retry_later', { dueAt });
};

/** No token: the row waits in `retry_wait` (`paced`), owned by the ledger; its attempts are untouched. */
export const pace = async (run: ChannelRun, row: DeliveryRecord, until: number): Promise<Step> => {
  const waiting = await move(run.ctx, row, 'retry_wait', 'paced', { nextAttemptAt: until });
  await park(run.ctx, run.job, 'paced', until + run.ctx.parkGraceMs);
  return done(waiting, 'retry_later', { dueAt: until });
};
