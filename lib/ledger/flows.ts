import type { DeliveryRecord, Ledger } from './port.js';

/**
 * When a channel is definitively settled as not delivered (by the reconciler, provider evidence, an
 * operator or the sweep), the fallback pointer moves on exactly as the dispatcher would move it: from
 * this channel's index, conditioned on the flow's version. Then the notification's seal is woken (due
 * now), so the ledger's sweep re-publishes the sealed intent within one reconcile period and the
 * dispatcher sends the next channel. Nothing is sent from here.
 *
 * Returns true when this call moved the pointer; false when there is no flow, the flow's active channel
 * is not this row's channel (another channel is active, or the pointer already moved), or a racing
 * worker moved it first.
 */
export const continueFallback = async (
  ledger: Ledger,
  row: DeliveryRecord,
  now: number,
): Promise<boolean> => {
  const flow = await ledger.getFlow(row.logicalKey);
  if (!flow) return false;
  if (flow.order[flow.activeIndex] !== row.channel) return false;
  if (flow.activeIndex >= flow.order.length - 1) return false;
  const advanced = await ledger.advanceFlow(row.logicalKey, flow.activeIndex, flow.version);
  if (advanced === undefined) return false;
  await ledger.rearm(row.logicalKey, now, 'fallback_advanced');
  return true;
};
