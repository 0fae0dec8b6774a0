import { DEFINITIVE_FAILURES, type DeliveryState, isTerminal } from './states.js';

/**
 * The one rule for what a dispatcher may do with a row that already exists (a claim conflict, a resumed
 * notification). Pure: the caller reads the row and the clock, this decides, the caller writes.
 *
 * Lease and state come before the content check: a redelivery whose content hash no longer matches
 * (a rotated HMAC key, a removed revision) must still settle an in-flight row whose lease expired.
 */
export type ExistingRowDecision =
  /** Terminal: nothing more to do. */
  | { kind: 'final' }
  /** `dispatching` with an expired lease: something may have been sent, so the row becomes `unknown`. */
  | { kind: 'mark_unknown' }
  /** A live lease elsewhere: come back when it has run out. */
  | { kind: 'busy'; until: number }
  /** Same identity, different content: recorded as blocked, never sent. */
  | { kind: 'content_mismatch' }
  /** `claimed` with an expired lease, or `stalled`: nothing was sent, so this worker takes it over. */
  | { kind: 'take_over' }
  /** A due `retry_wait`, or an `unknown` row whose provider still remembers the key: dispatch again. */
  | { kind: 'resume'; replay: boolean }
  /** `retry_wait` not yet due. */
  | { kind: 'wait'; until: number }
  /** `scheduled` not yet due: the seal (the sweep) owns it until then; nothing to do now. */
  | { kind: 'scheduled'; until: number }
  /** `provider_scheduled`: the provider holds it until sendAt; the sweep settles it. */
  | { kind: 'held_by_provider' }
  /** `unknown` without a replay window, or `quarantined`: the reconciler's or an operator's. */
  | { kind: 'leave' };

export interface ExistingRowView {
  state: DeliveryState;
  leaseUntil?: number;
  nextAttemptAt?: number;
  history: ReadonlyArray<{ s: DeliveryState }>;
}

/** A row whose history holds `unknown` is only ever asked again ("do you have this key?"), never retried. */
export const isReplay = (row: { history: ReadonlyArray<{ s: DeliveryState }> }): boolean =>
  row.history.some((entry) => entry.s === 'unknown');

export const decideExisting = (
  row: ExistingRowView,
  facts: { sameContent: boolean; now: number; replayWindowOpen: boolean },
): ExistingRowDecision => {
  const { now } = facts;
  if (row.state === 'dispatching') {
    const until = row.leaseUntil ?? 0;
    return until > now ? { kind: 'busy', until } : { kind: 'mark_unknown' };
  }
  // Same identity with other content is refused whatever the row's state, even when it is final.
  if (!facts.sameContent) return { kind: 'content_mismatch' };
  if (isTerminal(row.state)) return { kind: 'final' };
  switch (row.state) {
    case 'scheduled': {
      // Due: dispatched like a first claim, through every gate, at this moment's clock.
      const until = row.nextAttemptAt ?? 0;
      return until > now ? { kind: 'scheduled', until } : { kind: 'resume', replay: false };
    }
    case 'provider_scheduled':
      return { kind: 'held_by_provider' };
    case 'claimed': {
      const until = row.leaseUntil ?? 0;
      return until > now ? { kind: 'busy', until } : { kind: 'take_over' };
    }
    case 'stalled':
      return { kind: 'take_over' };
    case 'retry_wait': {
      const until = row.nextAttemptAt ?? 0;
      if (until > now) return { kind: 'wait', until };
      // A row that was unknown once may only be replayed, and only while the window is open.
      if (isReplay(row) && !facts.replayWindowOpen) return { kind: 'leave' };
      return { kind: 'resume', replay: isReplay(row) };
    }
    case 'unknown':
      return facts.replayWindowOpen ? { kind: 'resume', replay: true } : { kind: 'leave' };
    default:
      return { kind: 'leave' };
  }
};

/** A row the fallback pointer may move past: the channel definitively did not deliver. */
export const definitivelyFailed = (state: DeliveryState): boolean => DEFINITIVE_FAILURES.includes(state);

/**
 * A row no request has left from and none is leaving now: `scheduled`, `claimed` past its lease, or a
 * `retry_wait` that was never `unknown`. When its own intent (the sealed body a resume opens) can no
 * longer be sent — its template revision is gone, or its content no longer hashes to the row's (a rotated
 * key) — nothing will ever move it: the dispatcher closes it `blocked` with the reason instead of leaving
 * it to wait for a due time that never helps (lib/dispatch/phases/claim.ts, `blockUnsendable`).
 */
export const isUnsentAndIdle = (row: ExistingRowView, now: number): boolean => {
  if (isReplay(row)) return false;
  if (row.state === 'scheduled' || row.state === 'retry_wait') return true;
  return row.state === 'claimed' && (row.leaseUntil ?? 0) <= now;
};
