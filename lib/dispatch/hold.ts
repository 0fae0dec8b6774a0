import type { DeliveryRecord } from '../ledger/port.js';
import { HOLD_METRIC } from '../rate/TransportHolds.js';
import { HOLD_RETRY_MS } from '../transports/classify.js';
import type { SendResult, TransportHold } from '../transports/port.js';
import { type ChannelRun, delayFor, move, type Step } from './run.js';

/**
 * A hold answer (SES `SendingPausedException` or its daily quota, an SMS spend limit…): about the whole
 * transport, not this row. The shared hold item is set (lib/rate/TransportHolds.ts), so the transport's
 * other rows wait at the gate without calling the provider; this row waits in `retry_wait`
 * (`transport_hold:<reason>`) until the provider's `until` or the next probe, parked for the sweep. It is
 * never rejected, spends no retry budget and takes no fallback (`retry_wait` is not a definitive failure).
 */
export const holdTransport = async (
  run: ChannelRun,
  row: DeliveryRecord,
  result: Extract<SendResult, { kind: 'retryable' }> & { hold: TransportHold },
): Promise<Step> => {
  const { ctx } = run;
  const now = ctx.clock.now();
  const held = await ctx.holds?.hold(
    run.transport.name,
    result.hold,
    result.retryAfterMs ?? HOLD_RETRY_MS,
    result.reason,
    now,
  );
  const dueAt = held?.probeAt ?? now + delayFor(ctx, row.attempts, result.retryAfterMs);
  const waiting = await move(ctx, row, 'retry_wait', `transport_hold:${result.hold.reason}`, {
    attempts: row.attempts,
    nextAttemptAt: dueAt,
  });
  ctx.metrics?.count(HOLD_METRIC.rows);
  return { next: 'wait', row: waiting, delayMs: Math.max(0, dueAt - now) };
};

/** The probe of a held transport was answered: a send the provider took (or refused for its own reason) lifts the hold. */
export const afterProbe = async (run: ChannelRun, result: SendResult): Promise<void> => {
  if (!run.holdProbe) return;
  delete run.holdProbe;
  if (result.kind === 'accepted' || result.kind === 'rejected')
    await run.ctx.holds?.lift(run.transport.name, `probe_${result.kind}`, run.ctx.clock.now());
};
