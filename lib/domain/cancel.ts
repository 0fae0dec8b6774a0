import type { Channel } from './purposes.js';

/** What one cancel order covers within a business event (an absent field covers all). */
export interface CancelScopeView {
  id: string;
  by: string;
  reason: string;
  purpose?: string;
  channel?: Channel;
}

/** Whether a cancel order covers one channel of one purpose. */
export const cancelCovers = (
  order: Pick<CancelScopeView, 'purpose' | 'channel'>,
  purpose: string,
  channel: Channel,
): boolean =>
  (order.purpose === undefined || order.purpose === purpose) &&
  (order.channel === undefined || order.channel === channel);

/**
 * The history reason of a cancelled row: which order, by whom, how, why (bounded by the writer).
 * Parsed by the `cancellations` named query: `cancelled:<order>:by=<actor>:<how>:<reason>`.
 */
export const cancelWhy = (order: CancelScopeView, how: string): string =>
  `cancelled:${order.id}:by=${order.by}:${how}:${order.reason}`;
