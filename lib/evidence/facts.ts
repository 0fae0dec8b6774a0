import { FALLBACK_FACTS, type PurposePolicy } from '../domain/purposes.js';

/**
 * What a provider event says, as a typed fact. Facts, not states: `accepted` (the ledger state) means the
 * provider took the message; whether it then reached the recipient is a separate fact with its own source
 * ("accepted is not delivered", seed 004). The row keeps both: its state, and a `delivery` attribute with
 * the facts recorded after acceptance (see DeliveryFacts).
 */
export const FACTS = [
  /** The provider took the request (SES Send, SMS QUEUED/SUCCESSFUL, Twilio queued/sent, Resend sent). */
  'sent',
  /** The recipient's server / the handset took it (SES Delivery, SMS DELIVERED, Twilio delivered). */
  'delivered',
  /** Still trying (SES DeliveryDelay, SendGrid deferred, Resend delivery_delayed). */
  'delayed',
  /** Soft bounce: the provider may yet deliver, or a later send to the same address may work. */
  'bounced_transient',
  /** Hard bounce: this address will not take mail. Definitive; suppresses the recipient. */
  'bounced_permanent',
  /** The recipient marked it as spam. Delivered, and suppresses the recipient. */
  'complained',
  /**
   * The provider did not send it because the recipient is on the provider's own suppression list (SES
   * Bounce Permanent/Suppressed or Permanent/OnAccountSuppressionList, SES Complaint OnAccountSuppressionList,
   * Resend email.suppressed and bounces of subtype Suppressed, SendGrid dropped for a bounced, unsubscribed
   * or spam-reporting address). A definite non-delivery (it may move a fallback on) and a suppression whose
   * source is the provider.
   */
  'provider_suppressed',
  /**
   * The provider did not send it and will not, for a reason of its own or of the message (SES Reject /
   * Rendering Failure, SendGrid dropped for other reasons, Resend email.failed, Twilio canceled).
   */
  'rejected',
  /** The carrier did not deliver the text and will not (SMS FAILED/BLOCKED/…, Twilio failed/undelivered). */
  'carrier_failed',
  /** The text's validity period ran out before the handset took it (SMS TTL_EXPIRED). */
  'ttl_expired',
  /** The carrier never reported a final status (SMS TEXT_UNKNOWN): accepted, delivery unknown. */
  'unknown_final',
  /** Opened or clicked: it was delivered. */
  'engaged',
  /**
   * Part of the message reached the handset (Twilio partially_delivered): the provider had it; neither a
   * delivery nor a failure a fallback may move on.
   */
  'partially_delivered',
] as const;
export type EvidenceFact = (typeof FACTS)[number];

/** Facts that say the provider never took the message or it definitively did not arrive. */
export const NOT_DELIVERED: readonly EvidenceFact[] = [
  'rejected',
  'provider_suppressed',
  'bounced_permanent',
  'carrier_failed',
  'ttl_expired',
];

/** Facts that may unlock a purpose's fallback (per purpose, `fallbackOn`). Never a soft bounce, a delay or TEXT_UNKNOWN. */
export { FALLBACK_FACTS };
export type FallbackFact = (typeof FALLBACK_FACTS)[number];

/** The facts that move this purpose's fallback on (all of FALLBACK_FACTS unless the purpose says). */
export const fallbackFactsOf = (
  policy: Pick<PurposePolicy, 'fallbackOn'> | undefined,
): readonly EvidenceFact[] => policy?.fallbackOn ?? FALLBACK_FACTS;

/**
 * Facts that put the recipient on the suppression list for the channel. A `provider_suppressed` one records
 * the provider as its source (reason `provider_suppressed:<why>`, by `evidence:<source>`).
 */
export const SUPPRESSING: readonly EvidenceFact[] = [
  'bounced_permanent',
  'complained',
  'provider_suppressed',
];

/**
 * For an `unknown` row: which state the fact settles it to. A fact that proves the provider had the
 * message settles `accepted` (a soft bounce, a delay, TEXT_UNKNOWN included: the provider had it); one that
 * proves it did not arrive settles `rejected`, as lookups do, so a fallback can go on.
 */
export const settlesTo = (fact: EvidenceFact): 'accepted' | 'rejected' =>
  NOT_DELIVERED.includes(fact) ? 'rejected' : 'accepted';

/**
 * Which fact the row's delivery status shows when several were recorded (in any order): the most decisive
 * one, the latest among equals. A late DeliveryDelay never hides a Delivery; a complaint outranks the
 * delivery it implies.
 */
const RANK: Readonly<Record<EvidenceFact, number>> = {
  sent: 1,
  delayed: 2,
  unknown_final: 2,
  bounced_transient: 3,
  engaged: 4,
  partially_delivered: 4,
  delivered: 5,
  rejected: 6,
  carrier_failed: 6,
  ttl_expired: 6,
  bounced_permanent: 6,
  provider_suppressed: 6,
  complained: 7,
};

/**
 * One fact as the row keeps it. Compact, so a row stays within one write unit (1 KB) through its delivery
 * fact: `id` is stored with the row's provider message id replaced by `~`, `msg` only when it differs from
 * the row's, `by` only when it is not `evidence:<the id's source>` (compactFact / expandFact).
 */
export interface DeliveryFactEntry {
  /** The fact. */
  f: EvidenceFact;
  /** When the provider says it happened (epoch ms); the recording time when the event has none. */
  at: number;
  /** `evidence:<source>`; absent when it is the source the id starts with. */
  by?: string;
  /** Short reason (`ses:Bounce:Permanent/General`, `sms:TTL_EXPIRED`). */
  why: string;
  /** Provider event id (`~` stands for the row's provider message id). */
  id: string;
  /** Provider message id, when it is not the row's. */
  msg?: string;
}

/** The message id a compact id's `~` stands for (only ids that contain it are compacted). */
const MESSAGE_MARK = '~';

/** The entry as the row stores it, relative to the row's provider message id. */
export const compactFact = (
  entry: DeliveryFactEntry,
  rowMessageId: string | undefined,
): DeliveryFactEntry => {
  const { by, msg, id, ...rest } = entry;
  const source = id.split(':', 1)[0];
  const relative = rowMessageId && !id.includes(MESSAGE_MARK) && id.includes(rowMessageId);
  return {
    ...rest,
    id: relative ? id.replace(rowMessageId, MESSAGE_MARK) : id,
    ...(by !== undefined && by !== `evidence:${source}` ? { by } : {}),
    ...(msg && msg !== rowMessageId ? { msg } : {}),
  };
};

/** The entry in full (actor, message id, provider event id), whatever form the row stored it in. */
export const expandFact = (
  entry: DeliveryFactEntry,
  rowMessageId: string | undefined,
): Required<DeliveryFactEntry> => {
  const id = rowMessageId ? entry.id.replace(MESSAGE_MARK, rowMessageId) : entry.id;
  return {
    ...entry,
    id,
    by: entry.by ?? `evidence:${id.split(':', 1)[0]}`,
    msg: entry.msg ?? rowMessageId ?? '',
  };
};

/** Whether the row already holds this provider event, as a transition's evidence id or as a fact. */
export const holdsEvidence = (
  row: { evidenceIds?: string[]; providerMessageId?: string; delivery?: DeliveryFacts },
  evidenceId: string,
): boolean =>
  (row.evidenceIds?.includes(evidenceId) ?? false) ||
  (row.delivery?.h ?? []).some((e) => expandFact(e, row.providerMessageId).id === evidenceId);

/**
 * A fact a row the provider has already implies, so recording it would add nothing: the provider's
 * acceptance (SES Send, SMS QUEUED/SUCCESSFUL, …) of exactly the message the row records, or a second
 * open or click of one message (engagement is recorded once per message).
 */
export const addsNothing = (
  row: { providerMessageId?: string; delivery?: DeliveryFacts },
  event: { fact: EvidenceFact; providerMessageId: string },
): boolean => {
  const message = event.providerMessageId || row.providerMessageId;
  if (event.fact === 'sent') return !!message && message === row.providerMessageId;
  if (event.fact === 'engaged')
    return (row.delivery?.h ?? []).some(
      (e) => e.f === 'engaged' && expandFact(e, row.providerMessageId).msg === (message ?? ''),
    );
  return false;
};

/** The row's `delivery` attribute: the current delivery status and its own append-only history. */
export interface DeliveryFacts {
  status: EvidenceFact;
  /**
   * When the status fact happened; stored only when that fact is no longer in `h` (trimmed), since the
   * entry in `h` says it otherwise (statusAt). One attribute less keeps the row within one write unit.
   */
  at?: number;
  why: string;
  h: DeliveryFactEntry[];
  /** Facts recorded so far (the write condition; `h` keeps only the latest MAX_FACTS_PER_ROW). */
  n?: number;
}

/** Most facts a row keeps (opens and clicks can repeat); beyond it, only the status moves. */
export const MAX_FACTS_PER_ROW = 40;

/** When the row's delivery status fact happened. */
export const statusAt = (d: Pick<DeliveryFacts, 'status' | 'why' | 'h' | 'at'>): number | undefined =>
  d.at ?? [...d.h].reverse().find((e) => e.f === d.status && e.why === d.why)?.at;

export const withFact = (current: DeliveryFacts | undefined, entry: DeliveryFactEntry): DeliveryFacts => {
  const all = [...(current?.h ?? []), entry];
  const h = all.slice(-MAX_FACTS_PER_ROW);
  const top = all.reduce((best, e) =>
    RANK[e.f] > RANK[best.f] || (RANK[e.f] === RANK[best.f] && e.at >= best.at) ? e : best,
  );
  // The current status competes too, so a fact trimmed out of `h` still ranks.
  if (current && RANK[current.status] > RANK[top.f]) {
    const at = statusAt(current);
    const inH = h.some((e) => e.f === current.status && e.why === current.why && e.at === at);
    return { status: current.status, why: current.why, ...(inH || at === undefined ? {} : { at }), h };
  }
  return { status: top.f, why: top.why, ...(h.includes(top) ? {} : { at: top.at }), h };
};
