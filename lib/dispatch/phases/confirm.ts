import { cancelCovers, cancelWhy } from '../../domain/cancel.js';
import { isReplay } from '../../domain/resume.js';
import type { CancelOrder, DeliveryRecord } from '../../ledger/port.js';
import { METRIC } from '../../observability.js';
import { type ChannelRun, done, leaveUnknown, move, type Step, ttlFor } from '../run.js';

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
