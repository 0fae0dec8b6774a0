/**
 * Pure rules of the SMS spend circuit breaker (per purpose and destination country). The counter lives
 * in one DynamoDB item per purpose+country (lib/rate/SpendBreaker.ts); this decides what one send
 * attempt does given the item as read back from a refused conditional update.
 *
 * Windows are fixed (`windowSeconds`, aligned to the epoch): a rolling count approximated by its
 * current window. A window admits at most `maxSends` SMS; the first refusal opens the breaker for
 * `cooldownSeconds`. After the cool-down the next send closes it and starts a fresh count.
 *
 * The item's window only moves forward. A dispatcher whose clock lags (its window is older than the
 * item's) counts its send in the item's window; it never starts its own older window, which would reset
 * the count and let a second `maxSends` through the newer one (issue 26 item 6).
 */
export interface BreakerView {
  state?: 'open' | 'closed';
  windowStart?: number;
  sends?: number;
  openUntil?: number;
}

export type BreakerStep =
  /** The breaker is open: refuse. */
  | { kind: 'open'; until: number }
  /** Cool-down elapsed: close it and count this send as the first of a fresh window. */
  | { kind: 'close_and_count' }
  /** A later window than the item's (or no item yet): start it with this send. */
  | { kind: 'new_window' }
  /** The window is full: open the breaker (this send is refused). */
  | { kind: 'trip' }
  /** The item moved between the write and this read: try the write again. */
  | { kind: 'retry' };

export const windowStartOf = (now: number, windowSeconds: number): number =>
  Math.floor(now / (windowSeconds * 1000)) * windowSeconds * 1000;

export const decideBreaker = (
  item: BreakerView | undefined,
  facts: { now: number; windowStart: number; maxSends: number },
): BreakerStep => {
  if (!item || item.windowStart === undefined) return { kind: 'new_window' };
  if (item.state === 'open') {
    const until = item.openUntil ?? 0;
    return until > facts.now ? { kind: 'open', until } : { kind: 'close_and_count' };
  }
  if (item.windowStart < facts.windowStart) return { kind: 'new_window' };
  // This window, or a newer one a dispatcher with a later clock started: it counts there.
  if ((item.sends ?? 0) >= facts.maxSends) return { kind: 'trip' };
  return { kind: 'retry' };
};

/** The window a fresh count starts in: this clock's, or the item's when that is newer (never back). */
export const freshWindowStart = (item: BreakerView | undefined, windowStart: number): number =>
  Math.max(windowStart, item?.windowStart ?? 0);
