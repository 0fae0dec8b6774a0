import type { DeliveryRecord, Ledger, TransitionResult } from './port.js';

/**
 * The one rule for a `dispatching` row whose lease ran out: something may have been sent, so it becomes
 * `unknown` (never claimable again). Conditioned on the version read and on the lease having expired
 * by `now`, so a live worker's row is never touched and two actors make one transition. The dispatcher,
 * the sweep, the reconciler and operator decisions all call this; only `by` differs.
 */
export const expireDispatchingLease = (
  ledger: Ledger,
  row: DeliveryRecord,
  by: string,
  now: number,
): Promise<TransitionResult> =>
  ledger.transition({
    pk: row.pk,
    from: 'dispatching',
    to: 'unknown',
    expectedVersion: row.version,
    by,
    why: 'dispatching_lease_expired',
    leaseExpiredBefore: now,
    now,
  });
