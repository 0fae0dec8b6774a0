import { replayWindowOpen } from '../../domain/replay.js';
import type { DeliveryRecord } from '../../ledger/port.js';
import { HOLD_METRIC } from '../../rate/TransportHolds.js';
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

/**
 * No token, or a held transport: the row waits in `retry_wait` (`paced`, `transport_hold:<reason>`), owned
 * by the ledger (sealed; the sweep resumes it when due); its attempts are untouched.
 */
export const pace = async (
  run: ChannelRun,
  row: DeliveryRecord,
  until: number,
  why = 'paced',
): Promise<Step> => {
  const waiting = await move(run.ctx, row, 'retry_wait', why, { nextAttemptAt: until });
  if (why.startsWith('transport_hold')) run.ctx.metrics?.count(HOLD_METRIC.rows);
  await park(run.ctx, run.job, why.split(':')[0]!, until + run.ctx.parkGraceMs);
  return done(waiting, 'retry_later', { dueAt: until });
};
