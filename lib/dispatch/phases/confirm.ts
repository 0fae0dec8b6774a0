import { cancelCovers, cancelWhy } from '../../domain/cancel.js';
import { isReplay } from '../../domain/resume.js';
import type { CancelOrder, DeliveryRecord } from '../../ledger/port.js';
import { boundWhy } from '../../ledger/why.js';
import { METRIC } from '../../observability.js';
import type { CancelResult } from '../../transports/port.js';
import { type ChannelRun, delayFor, done, iso, leaveUnknown, move, type Step, ttlFor } from '../run.js';

/** After the durable `dispatching` write: the cancel gate for cancellable purposes, then the send. */
export const afterDispatching = (run: ChannelRun, row: DeliveryRecord): Step =>
  run.job.valid.policy.cancellable ? { next: 'confirm', row } : { next: 'send', row };

/**
 * confirm: the cancel gate, for purposes that declare `cancellable`. It reads the event's cancel marker
 * strongly consistently AFTER the durable `dispatching` write and before the provider call, so the read
 * is the linearization point: a cancel committed before it stops this send (`dispatching → cancelled`,
 * nothing left); a cancel committed after it finds this row already `dispatching` and reports "too late".
 */
export const confirm = async (run: ChannelRun, row: DeliveryRecord): Promise<Step> => {
  const order = await cancelOrderFor(run);
  if (!order) return { next: 'send', row };
  // A replay asks about a send that may already have happened: the row stays for the reconciler.
  if (isReplay(row)) return leaveUnknown(run, row, `replay_refused:cancelled:${order.id}`);
  const cancelled = await move(run.ctx, row, 'cancelled', cancelWhy(order, 'marker_read_before_send'), {
    ttl: ttlFor(run, run.ctx.clock.now()),
  });
  run.ctx.metrics?.count(METRIC.cancelled);
  return done(cancelled, 'cancelled');
};

/** The committed cancel order whose scope covers this channel of this intent, if any. */
export const cancelOrderFor = async (run: ChannelRun): Promise<CancelOrder | undefined> => {
  const { intent } = run.job.valid;
  const marker = await run.ctx.ledger.getCancelMarker(intent.tenant, intent.eventId);
  return marker?.orders.find((o) => cancelCovers(o, intent.purpose, run.channel));
};

/**
 * A send the provider holds for later (`provider_scheduled`), of a cancellable purpose: the cancel marker
 * is read again after that write (and on every redelivery of the message). A cancel committed while the
 * request was in flight — its command found the row `dispatching`, gave up waiting and reported "too
 * late" — is carried out here, at the provider's cancel route:
 *
 *   cancelled     `provider_scheduled → cancelled` (how = provider_confirmed, with the provider's id)
 *   too_late      recorded on the row (`cancel_too_late`, the provider's answer); asked once
 *   unavailable   recorded (`cancel_unconfirmed`); the message comes back to ask again before sendAt
 *
 * Undefined when there is nothing to do: not cancellable, no covering order, or its answer recorded.
 */
export const cancelHeld = async (run: ChannelRun, row: DeliveryRecord): Promise<Step | undefined> => {
  const { ctx } = run;
  if (!run.job.valid.policy.cancellable || row.state !== 'provider_scheduled') return undefined;
  const order = await cancelOrderFor(run);
  if (!order || !row.providerMessageId) return undefined;
  if (row.history.some((e) => e.why?.startsWith(`cancel_too_late:${order.id}:`))) return undefined;
  const cancelScheduled = run.transport.cancelScheduled;
  let answer: CancelResult;
  if (!cancelScheduled || run.transport.name !== row.transport)
    answer = { kind: 'unavailable', reason: 'no_cancel_route_configured' };
  else
    try {
      answer = await cancelScheduled.call(run.transport, row.providerMessageId);
    } catch (error) {
      answer = { kind: 'unavailable', reason: `threw:${error instanceof Error ? error.name : 'unknown'}` };
    }
  const now = ctx.clock.now();
  if (answer.kind === 'cancelled') {
    const result = await ctx.ledger.transition({
      pk: row.pk,
      from: 'provider_scheduled',
      to: 'cancelled',
      expectedVersion: row.version,
      by: ctx.workerId,
      why: boundWhy(cancelWhy(order, `provider_confirmed:${row.providerMessageId}`)),
      set: { ttl: ttlFor(run, now) },
      now,
    });
    if (result.kind !== 'ok') {
      // The cancel command (or a sweep) moved it first: its write stands.
      const current = result.current ?? row;
      return done(current, current.state === 'cancelled' ? 'cancelled' : 'handed_to_provider_schedule');
    }
    ctx.metrics?.count(METRIC.cancelled);
    return done(result.record, 'cancelled');
  }
  // The provider's answer is evidence: recorded on the row, whose state does not change.
  const handoffAt = [...row.history].reverse().find((e) => e.s === 'provider_scheduled')?.at ?? row.updatedAt;
  const kind = answer.kind === 'too_late' ? 'cancel_too_late' : 'cancel_unconfirmed';
  await ctx.ledger.annotate({
    pk: row.pk,
    state: row.state,
    expectedVersion: row.version,
    by: ctx.workerId,
    why: boundWhy(`${kind}:${order.id}:provider_answer=${answer.reason}:handoff=${iso(handoffAt)}`),
    now,
  });
  const sendAt = row.nextAttemptAt ?? 0;
  if (answer.kind === 'too_late' || now >= sendAt) return done(row, 'handed_to_provider_schedule');
  const dueAt = Math.min(now + delayFor(ctx, Math.max(1, row.attempts)), sendAt);
  return done(row, 'retry_later', { dueAt, providerMessageId: row.providerMessageId });
};
