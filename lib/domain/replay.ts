import type { DeliveryState } from './states.js';

/** Margin for clock skew between us and the provider at the end of its key-retention window. */
export const REPLAY_MARGIN_MS = 60_000;

/**
 * The one rule for replaying a send whose answer was lost: safe only when the provider enforces the
 * idempotency key, the row was sent through that same provider, and the provider still remembers the
 * key (measured from the first dispatch, with a margin). The dispatcher (on the parked message's
 * redelivery) and the reconciler (deciding whether to wait for that replay) both ask this.
 */
export const replayWindowOpen = (
  row: { transport?: string; history: ReadonlyArray<{ s: DeliveryState; at: number }> },
  transport: { name: string; capabilities: { idempotencyKey: boolean; keyRetentionSeconds: number } },
  now: number,
): boolean => {
  if (!transport.capabilities.idempotencyKey || row.transport !== transport.name) return false;
  const firstDispatch = row.history.find((entry) => entry.s === 'dispatching')?.at;
  if (firstDispatch === undefined) return false;
  return now < firstDispatch + transport.capabilities.keyRetentionSeconds * 1000 - REPLAY_MARGIN_MS;
};
