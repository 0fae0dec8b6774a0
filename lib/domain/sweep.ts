import { definitivelyFailed } from './resume.js';
import { canTransition, type DeliveryState, isTerminal, NON_TERMINAL_STATES } from './states.js';

/**
 * What the ledger's sweep does with one row of a sealed (parked) notification. Pure: the sweeper reads
 * the seal, the rows and the flow pointer, this decides, the sweeper writes or publishes.
 *
 *   scheduled, due                                                                   → resume
 *   provider_scheduled, sendAt (+ grace) passed                                      → settle_handoff
 *   row missing / claimed past its lease / retry_wait due / unknown with a replay window → resume
 *   dispatching past its lease                                                       → mark_unknown
 *   a lease still running / a retry not yet due                                      → look again at T
 *   fallback: active channel definitively failed and a next channel exists          → advance (+ resume)
 *   fallback: active channel accepted, bounces may still come                        → hold until T
 *   unknown without replay, quarantined, stalled: the reconciler's or an operator's  → look again at T
 *   final                                                                            → done
 */
export type SweepRowAction =
  | { kind: 'resume' }
  | { kind: 'mark_unknown' }
  /** `provider_scheduled` whose sendAt has passed: the provider sent it (or evidence will say otherwise). */
  | { kind: 'settle_handoff' }
  | { kind: 'advance' }
  | { kind: 'later'; at: number }
  | { kind: 'done' };

export interface SweepRowView {
  state: DeliveryState;
  leaseUntil?: number;
  nextAttemptAt?: number;
  updatedAt: number;
}

export interface SweepFacts {
  now: number;
  /** Looking again after a lease or a due time: the queue message normally comes back first. */
  graceMs: number;
  /** When to look again at a row that someone else owns for now (reconciler, operator). */
  recheckMs: number;
  /** The seal's own end (its TTL, epoch ms): nothing is worth waiting for beyond it. */
  sealEndsAt: number;
  /** Fallback only: whether a channel follows the active one. */
  hasNextChannel: boolean;
  /** Fallback only: how long after acceptance a bounce may still move the pointer. */
  fallbackHoldMs: number;
  replayWindowOpen: boolean;
}

export const sweepRow = (row: SweepRowView | undefined, facts: SweepFacts): SweepRowAction => {
  const { now } = facts;
  // Sealed on the last receive, then the process died before the claim: nothing was sent.
  if (!row) return { kind: 'resume' };
  if (isTerminal(row.state)) {
    if (!facts.hasNextChannel) return { kind: 'done' };
    if (definitivelyFailed(row.state)) return { kind: 'advance' };
    if (row.state === 'accepted') {
      const holdUntil = Math.min(row.updatedAt + facts.fallbackHoldMs, facts.sealEndsAt);
      return holdUntil > now ? { kind: 'later', at: holdUntil } : { kind: 'done' };
    }
    return { kind: 'done' };
  }
  switch (row.state) {
    case 'scheduled': {
      // The sweep is the owner of a scheduled row (its queue message was acknowledged): due means now.
      const due = row.nextAttemptAt ?? 0;
      return due > now ? { kind: 'later', at: due } : { kind: 'resume' };
    }
    case 'provider_scheduled': {
      const due = row.nextAttemptAt ?? 0;
      return due + facts.graceMs > now
        ? { kind: 'later', at: due + facts.graceMs }
        : { kind: 'settle_handoff' };
    }
    case 'claimed': {
      const until = row.leaseUntil ?? 0;
      return until > now ? { kind: 'later', at: until + facts.graceMs } : { kind: 'resume' };
    }
    case 'dispatching': {
      const until = row.leaseUntil ?? 0;
      return until > now ? { kind: 'later', at: until + facts.graceMs } : { kind: 'mark_unknown' };
    }
    case 'retry_wait': {
      const due = row.nextAttemptAt ?? 0;
      return due > now ? { kind: 'later', at: due + facts.graceMs } : { kind: 'resume' };
    }
    case 'unknown':
      return facts.replayWindowOpen ? { kind: 'resume' } : { kind: 'later', at: now + facts.recheckMs };
    default:
      // quarantined, stalled: an operator decides; the seal stays so a resend needs no intent file.
      return { kind: 'later', at: Math.min(now + facts.recheckMs, facts.sealEndsAt) };
  }
};

/**
 * Who owns each non-final row of a notification the sweep has resumed `maxResumes` times without it
 * moving. Every non-final state has exactly one answer, so nothing is left waiting for a resume that
 * never helps (invariant 8):
 *
 *   stall      scheduled, claimed, retry_wait: nothing was sent and nothing will move them → `stalled`
 *              with the reason, in the attention index (StalledRows alarm), for an operator
 *   sweep      dispatching (marked `unknown` past its lease), provider_scheduled (settled after sendAt)
 *   attention  unknown, quarantined, stalled: already in the attention index (reconciler, operator)
 */
export type ResumeLimitOwner = 'stall' | 'sweep' | 'attention';

const SWEEP_SETTLES: readonly DeliveryState[] = ['dispatching', 'provider_scheduled'];

export const ownerAtResumeLimit = (state: DeliveryState): ResumeLimitOwner | undefined => {
  if (isTerminal(state)) return undefined;
  if (SWEEP_SETTLES.includes(state)) return 'sweep';
  if (state !== 'stalled' && canTransition(state, 'stalled')) return 'stall';
  return 'attention';
};

/** The states the sweep stalls at the resume limit: every non-final state nobody else settles. */
export const STALL_AT_RESUME_LIMIT: readonly DeliveryState[] = NON_TERMINAL_STATES.filter(
  (s) => ownerAtResumeLimit(s) === 'stall',
);
