/**
 * The delivery state machine, as data. Code (the ledger adapter's condition checks, the dispatcher,
 * the reconciler) and tests both read this one table; nothing else decides what may follow what.
 *
 *   claimed ──► dispatching ──► accepted
 *      │             │  ├─────► rejected
 *      │             │  ├─────► retry_wait ──► dispatching (same key, same content hash)
 *      │             │  └─────► unknown ──► accepted | rejected        (evidence)
 *      │             │              │   └─► dispatching             (replay under a provider-enforced key)
 *      │             │              └──► quarantined ──► resolved_* | superseded (operator)
 *      ├─► expired | suppressed | blocked | rejected (gates before any provider call)
 *      └─► stalled (claimed or retry_wait that the sweep could not resume: nothing sealed)
 *              └──► claimed (a redriven message takes it over) | expired | resolved_rejected | superseded
 *
 *   scheduled ──► dispatching | expired | suppressed | blocked     (the sweep resumes it at sendAt: gates then)
 *   dispatching ──► provider_scheduled ──► accepted (sendAt passed) | cancelled (provider confirmed) | rejected
 *       └──────► cancelled      (a committed cancel marker; also from claimed, retry_wait, stalled, and from
 *                                dispatching only before the provider call: the marker read follows that write)
 *       └──────► blocked        (the SMS spend breaker, counted after the dispatching write, before the call)
 *       └──────► suppressed     (the provider refused it: the destination opted out, SMS STOP)
 */
export const STATES = [
  'scheduled',
  'claimed',
  'dispatching',
  'provider_scheduled',
  'retry_wait',
  'unknown',
  'quarantined',
  'stalled',
  'accepted',
  'rejected',
  'expired',
  'suppressed',
  'blocked',
  'invalid',
  'resolved_accepted',
  'resolved_rejected',
  'superseded',
  'cancelled',
] as const;

export type DeliveryState = (typeof STATES)[number];

/**
 * States a row may be created in (the first history entry). The read-only gates run before the claim,
 * so a claim is written directly as `dispatching` (leased), as `scheduled` (held by the ledger until
 * its due time), or in the state a gate chose; `claimed`
 * remains for claims that wait (a lease taken over, a row a resume takes).
 */
export const INITIAL_STATES: readonly DeliveryState[] = [
  'claimed',
  'scheduled',
  'dispatching',
  'expired',
  'suppressed',
  'blocked',
  'invalid',
];

export const TRANSITIONS: Readonly<Record<DeliveryState, readonly DeliveryState[]>> = {
  // claimed → claimed is a lease takeover: the previous owner's lease expired before it dispatched.
  // A scheduled row was claimed at publish and waits, sealed, for its sendAt; every gate runs when it is due.
  // scheduled → retry_wait: due, but no send token yet (`paced`), no attempt spent.
  scheduled: ['dispatching', 'retry_wait', 'expired', 'suppressed', 'blocked', 'cancelled', 'stalled'],
  // claimed → retry_wait: no send token yet (`paced`), no attempt spent.
  claimed: [
    'claimed',
    'dispatching',
    'retry_wait',
    'expired',
    'suppressed',
    'blocked',
    'rejected',
    'stalled',
    'cancelled',
  ],
  // dispatching → cancelled: only the lease holder, after its own `dispatching` write and before the
  // provider call, when the strongly consistent cancel-marker read finds a cancel (nothing was sent).
  // dispatching → blocked: the same, when the SMS spend breaker (counted only by the lease holder, so a
  // duplicate whose claim conflicted is never counted) refuses the send (nothing was sent).
  // dispatching → suppressed: the provider refused the send because the destination opted out (SMS STOP).
  dispatching: [
    'accepted',
    'provider_scheduled',
    'rejected',
    'suppressed',
    'retry_wait',
    'unknown',
    'cancelled',
    'blocked',
  ],
  // The provider accepted the message (its id is recorded) and holds it until sendAt (Resend
  // `scheduled_at`, Twilio `SendAt`): the sweep settles it `accepted` once sendAt has passed; a cancel
  // the provider confirmed makes it `cancelled`; evidence may reject it.
  provider_scheduled: ['accepted', 'cancelled', 'rejected'],
  // retry_wait → unknown: a row that was unknown once and whose replay window closed while it waited.
  // retry_wait → blocked: an SMS country rule or the spend breaker refused the next attempt.
  retry_wait: [
    'dispatching',
    'expired',
    'suppressed',
    'blocked',
    'rejected',
    'retry_wait',
    'stalled',
    'unknown',
    'cancelled',
  ],
  // Nothing was sent from a stalled row (it was claimed or waiting to retry): a redelivered message may
  // take it over, or an operator closes it.
  stalled: ['claimed', 'expired', 'resolved_rejected', 'superseded', 'cancelled'],
  // unknown leaves only through evidence (accepted/rejected/replay) or quarantine; never back to claimed.
  unknown: [
    'accepted',
    'rejected',
    'dispatching',
    'quarantined',
    'resolved_accepted',
    'resolved_rejected',
    'superseded',
  ],
  quarantined: ['accepted', 'rejected', 'resolved_accepted', 'resolved_rejected', 'superseded'],
  accepted: [],
  rejected: [],
  expired: [],
  suppressed: [],
  blocked: [],
  invalid: [],
  resolved_accepted: [],
  resolved_rejected: [],
  superseded: [],
  cancelled: [],
};

export const TERMINAL_STATES: readonly DeliveryState[] = STATES.filter((s) => TRANSITIONS[s].length === 0);

/** Operator-decision outcomes: only a recorded human decision produces these. */
export const OPERATOR_STATES: readonly DeliveryState[] = [
  'resolved_accepted',
  'resolved_rejected',
  'superseded',
];

/**
 * States that tell a fallback workflow the active channel definitively did not deliver. `blocked` is
 * deliberately absent: a content mismatch or a bad attachment is a refusal that needs a human, and a
 * duplicate intent with different content must never authorize a second channel. `cancelled` is absent
 * too: a withdrawn notification must not reappear on the next channel.
 */
export const DEFINITIVE_FAILURES: readonly DeliveryState[] = [
  'rejected',
  'expired',
  'suppressed',
  'resolved_rejected',
];

/** States that need a human or the reconciler; the ledger keeps them in its sparse attention index. */
export const ATTENTION_STATES: readonly DeliveryState[] = ['unknown', 'quarantined', 'retry_wait', 'stalled'];

/** States that are not final and may still lead to a provider call or an outcome. */
export const NON_TERMINAL_STATES: readonly DeliveryState[] = STATES.filter((s) => TRANSITIONS[s].length > 0);

export const isTerminal = (state: DeliveryState): boolean => TRANSITIONS[state].length === 0;

export const canTransition = (from: DeliveryState, to: DeliveryState): boolean =>
  TRANSITIONS[from].includes(to);
