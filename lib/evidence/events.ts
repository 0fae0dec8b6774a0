import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { boundWhy } from '../ledger/why.js';
import { KEY_TAG, LABEL_SHAPE } from '../transports/labels.js';
import { type EvidenceFact, settlesTo } from './facts.js';
import {
  type OptSignal,
  type ProviderSignal,
  SMS_V2_OPT_IN_KEYWORDS,
  SMS_V2_OPT_OUT_KEYWORDS,
} from './signals.js';

/**
 * Provider events, read into one shape the recorder understands. Only what evidence needs is read:
 * the key hash we put on the message, the provider's message id, and the outcome. Addresses in the
 * events (`mail.destination`, `destinationPhoneNumber`) are never copied out of the raw event.
 */
export type EvidenceSource = 'ses' | 'sms' | 'resend' | 'twilio' | 'sendgrid' | 'rest';

/**
 * A provider event as parsed, before its label is authenticated: what the event says, and the label it
 * carried (lib/transports/labels.ts). Nothing in it may reach the ledger until the recorder has opened the
 * label with this deployment's secret (lib/evidence/labelAuth.ts).
 */
export interface ProviderEvidence {
  source: EvidenceSource;
  /** Recorded on the row; the same provider event seen twice is recorded once. */
  evidenceId: string;
  /** The opaque label carried in SES `mail.tags`, SMS `context`, Resend tags, SendGrid custom args, … */
  label: string;
  /** What the event says happened (sent, delivered, bounced, …). */
  fact: EvidenceFact;
  /** The state an `unknown` row settles to from this fact alone (settlesTo(fact)). */
  outcome: 'accepted' | 'rejected';
  /** The provider's message id; empty when the event names none (a SendGrid asynchronous bounce). */
  providerMessageId: string;
  /** When the provider says it happened (epoch ms), if the event says. */
  at?: number;
  /** Short machine-readable reason for the history entry (`ses:Bounce:Permanent`, `sms:DELIVERED`). */
  why: string;
}

/** Evidence whose label opened (or was recorded after it opened): it names one of our rows. */
export interface Evidence extends Omit<ProviderEvidence, 'label'> {
  /** The 64-hex dedupe-key hash the label names. */
  idempotencyKey: string;
  /**
   * The ledger row's key, when the label carried it (form 1): the row is then read directly (one
   * GetItem), with no pointer item. Absent for a key too long for a label: its claim wrote the
   * `ev#<hash>` pointer.
   */
  rowKey?: string;
}

/**
 * What a provider event is to the ledger: evidence about one of our messages, or ignored with the reason
 * (docs/transports.md lists every documented event and which). An ignored event may carry a `signal` that
 * is not about one message: an opt-out reply, a change of our account's standing (lib/evidence/signals.ts).
 */
export type ParsedEvent =
  | { kind: 'evidence'; evidence: ProviderEvidence }
  | { kind: 'ignored'; source: EvidenceSource | 'unknown'; reason: string; signal?: ProviderSignal };

export { LABEL_SHAPE };

/** Epoch ms from an ISO timestamp, or undefined. */
export const timeOf = (value: unknown): number | undefined => {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const ms = typeof value === 'number' ? value : Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
};

/** Builds a ProviderEvidence with its outcome derived from the fact, so the two can never disagree. */
export const evidence = (e: Omit<ProviderEvidence, 'outcome'>): ParsedEvent => ({
  kind: 'evidence',
  evidence: { ...e, outcome: settlesTo(e.fact), why: boundWhy(e.why) },
});

/**
 * One rule for every provider's bounce: only a `Permanent` bounce is hard. `Transient`, `Temporary`,
 * `Undetermined` (and anything else) are soft: the provider had the message and a later send may work, so
 * they never suppress and never move a fallback on. A permanent bounce whose subtype says the provider's
 * own suppression list stopped it (SES and Resend `Suppressed`, `OnAccountSuppressionList`: "Amazon SES
 * has suppressed sending to this address") is `provider_suppressed`: not sent, suppressed at the provider.
 */
export const bounceFact = (type: string | undefined, subType: string | undefined): EvidenceFact => {
  if (!/^permanent$/i.test(type ?? '')) return 'bounced_transient';
  return /^(suppressed|onaccountsuppressionlist)$/i.test(subType ?? '')
    ? 'provider_suppressed'
    : 'bounced_permanent';
};

// --- SES v2 configuration-set events (EventBridge `detail`, or an SNS message) -----------------------

const Timed = z.optional(z.object({ timestamp: z.optional(z.string()) }));
const SesEventSchema = z.object({
  eventType: z.string(),
  mail: z.object({
    messageId: z.string().check(z.minLength(1)),
    timestamp: z.optional(z.string()),
    tags: z.optional(z.record(z.string(), z.array(z.string()))),
  }),
  bounce: z.optional(
    z.object({
      bounceType: z.optional(z.string()),
      bounceSubType: z.optional(z.string()),
      feedbackId: z.optional(z.string()),
      timestamp: z.optional(z.string()),
    }),
  ),
  complaint: z.optional(
    z.object({
      feedbackId: z.optional(z.string()),
      timestamp: z.optional(z.string()),
      // "null or OnAccountSuppressionList": SES accepted the message but did not attempt to send it.
      complaintSubType: z.optional(z.nullable(z.string())),
    }),
  ),
  delivery: Timed,
  deliveryDelay: Timed,
  send: z.optional(z.looseObject({})),
});

const SES_FACTS: Readonly<Record<string, EvidenceFact>> = {
  Send: 'sent',
  Delivery: 'delivered',
  DeliveryDelay: 'delayed',
  Complaint: 'complained',
  Open: 'engaged',
  Click: 'engaged',
  Reject: 'rejected',
  RenderingFailure: 'rejected',
};

export const parseSesEvent = (detail: unknown): ParsedEvent => {
  const parsed = SesEventSchema.safeParse(detail);
  if (!parsed.success) return { kind: 'ignored', source: 'ses', reason: 'unreadable_ses_event' };
  const { eventType, mail, bounce, complaint, delivery, deliveryDelay } = parsed.data;
  const label = mail.tags?.[KEY_TAG]?.[0];
  if (!label || !LABEL_SHAPE.test(label))
    return { kind: 'ignored', source: 'ses', reason: 'no_sendproof_key' };
  const type = eventType.replace(/\s+/g, '');
  let fact: EvidenceFact | undefined = SES_FACTS[type];
  let why = `ses:${type}`;
  if (type === 'Bounce') {
    fact = bounceFact(bounce?.bounceType, bounce?.bounceSubType);
    if (bounce?.bounceType)
      why = `${why}:${bounce.bounceType}${bounce.bounceSubType ? `/${bounce.bounceSubType}` : ''}`;
  }
  if (type === 'Complaint' && complaint?.complaintSubType === 'OnAccountSuppressionList') {
    // Not a complaint from the recipient: SES never attempted delivery (the account suppression list).
    fact = 'provider_suppressed';
    why = `${why}:OnAccountSuppressionList`;
  }
  if (!fact) return { kind: 'ignored', source: 'ses', reason: `ses_event_type_not_evidence:${type}` };
  const at = timeOf(
    bounce?.timestamp ??
      complaint?.timestamp ??
      delivery?.timestamp ??
      deliveryDelay?.timestamp ??
      (type === 'Send' ? mail.timestamp : undefined),
  );
  return evidence({
    source: 'ses',
    evidenceId: `ses:${mail.messageId}:${type}`,
    label,
    fact,
    providerMessageId: mail.messageId,
    why,
    ...(at !== undefined ? { at } : {}),
  });
};

// --- AWS End User Messaging SMS events (an SNS message, or EventBridge `detail`) ---------------------

const SmsEventSchema = z.object({
  eventType: z.optional(z.string()),
  messageId: z.string().check(z.minLength(1)),
  messageStatus: z.optional(z.string()),
  isFinal: z.optional(z.boolean()),
  context: z.optional(z.record(z.string(), z.string())),
  eventTimestamp: z.optional(z.union([z.number(), z.string()])),
});

/** AWS accepted the SendTextMessage request; the carrier has not said more yet. */
const SMS_SENT = new Set(['SUCCESSFUL', 'PENDING', 'QUEUED', 'SENT']);
/** The text did not and will not reach the handset (carrier or AWS failure). */
const SMS_FAILED = new Set([
  'FAILED',
  'BLOCKED',
  'CARRIER_BLOCKED',
  'PROTECT_BLOCKED',
  'UNREACHABLE',
  'CARRIER_UNREACHABLE',
  'INVALID',
  'INVALID_MESSAGE',
  'SPAM',
  'OPTED_OUT',
  'MAX_PRICE_EXCEEDED',
  'DESTINATION_COUNTRY_BLOCKED',
]);

const smsFact = (status: string): EvidenceFact | undefined => {
  if (status === 'DELIVERED') return 'delivered';
  if (status === 'TTL_EXPIRED') return 'ttl_expired';
  // TEXT_UNKNOWN: the carrier never reported a final status. Accepted; delivery stays unknown.
  if (status === 'UNKNOWN') return 'unknown_final';
  if (SMS_SENT.has(status)) return 'sent';
  if (SMS_FAILED.has(status)) return 'carrier_failed';
  return undefined;
};

export const parseSmsEvent = (message: unknown): ParsedEvent => {
  const parsed = SmsEventSchema.safeParse(message);
  if (!parsed.success) return { kind: 'ignored', source: 'sms', reason: 'unreadable_sms_event' };
  const { eventType, messageId, messageStatus, isFinal, context, eventTimestamp } = parsed.data;
  const label = context?.[KEY_TAG];
  if (!label || !LABEL_SHAPE.test(label))
    return { kind: 'ignored', source: 'sms', reason: 'no_sendproof_key' };
  // The event type is the documented enum (TEXT_DELIVERED, TEXT_CARRIER_UNREACHABLE, …); messageStatus
  // only when an event has no type.
  const status = (eventType?.replace(/^TEXT_/, '') || messageStatus || '').toUpperCase();
  const fact = smsFact(status);
  // A failure that is not final may still turn into a delivery; only a final one is evidence of failure.
  if (!fact || (NOT_FINAL_SENSITIVE.includes(fact) && isFinal === false))
    return { kind: 'ignored', source: 'sms', reason: `sms_status_not_evidence:${status || 'none'}` };
  const at = timeOf(eventTimestamp);
  return evidence({
    source: 'sms',
    evidenceId: `sms:${messageId}:${status}`,
    label,
    fact,
    providerMessageId: messageId,
    why: `sms:${status}`,
    ...(at !== undefined ? { at } : {}),
  });
};

const NOT_FINAL_SENSITIVE: readonly EvidenceFact[] = ['carrier_failed', 'ttl_expired'];

// --- End User Messaging SMS two-way inbound messages (an SNS message) ---------------------------------

const SmsInboundSchema = z.object({
  originationNumber: z.string().check(z.minLength(1)),
  destinationNumber: z.optional(z.string()),
  messageKeyword: z.optional(z.string()),
  messageBody: z.optional(z.string()),
  inboundMessageId: z.string().check(z.minLength(1)),
});

/**
 * A reply to one of our numbers ("Example of a two-way SMS message payload for Amazon SNS topics"). It is
 * never delivery evidence; an opt-out or opt-in reply carries the signal: the registered keyword the
 * service matched (`messageKeyword`), else the reply itself when it is exactly a keyword ("When your
 * number receives a message that begins with a keyword"; a sentence that starts with STOP is not taken).
 */
export const parseSmsInbound = (message: unknown): ParsedEvent => {
  const parsed = SmsInboundSchema.safeParse(message);
  if (!parsed.success) return { kind: 'ignored', source: 'sms', reason: 'unreadable_sms_inbound' };
  const { originationNumber, destinationNumber, messageKeyword, messageBody, inboundMessageId } = parsed.data;
  const reply = (messageBody ?? '').trim().toUpperCase();
  const candidates = [messageKeyword?.trim().toUpperCase(), reply].filter((k): k is string => Boolean(k));
  const optOut = candidates.find((k) => SMS_V2_OPT_OUT_KEYWORDS.includes(k));
  const optIn = candidates.find((k) => SMS_V2_OPT_IN_KEYWORDS.includes(k));
  const keyword = optOut ?? optIn;
  if (!keyword) return { kind: 'ignored', source: 'sms', reason: 'sms_inbound_not_an_opt_keyword' };
  const signal: OptSignal = {
    kind: optOut ? 'opt_out' : 'opt_in',
    channel: 'sms',
    provider: 'sms-v2',
    phone: originationNumber,
    ...(destinationNumber ? { ourNumber: destinationNumber } : {}),
    keyword,
    evidenceId: `sms:inbound:${inboundMessageId}`,
  };
  return { kind: 'ignored', source: 'sms', reason: `sms_inbound_${signal.kind}`, signal };
};

// --- Lambda event envelopes ---------------------------------------------------------------------------

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** An SES event has `mail`; an SMS event has `messageId` at the top level; an SMS reply has `inboundMessageId`. */
const parseProviderEvent = (value: unknown): ParsedEvent => {
  if (isObject(value) && isObject(value.mail)) return parseSesEvent(value);
  if (isObject(value) && typeof value.messageId === 'string') return parseSmsEvent(value);
  if (isObject(value) && typeof value.inboundMessageId === 'string') return parseSmsInbound(value);
  return { kind: 'ignored', source: 'unknown', reason: 'not_a_provider_event' };
};

/**
 * The evidence function receives two envelopes: EventBridge (SES `source: aws.ses`, or SMS
 * `aws.sms-voice`) with the provider event in `detail`, and SNS (End User Messaging SMS event
 * destinations) with the provider event as the JSON string `Records[].Sns.Message`.
 */
export const parseLambdaEvent = (event: unknown): ParsedEvent[] => {
  if (!isObject(event)) return [{ kind: 'ignored', source: 'unknown', reason: 'not_an_object' }];
  if (Array.isArray(event.Records)) {
    return event.Records.map((record): ParsedEvent => {
      const sns = isObject(record) && isObject(record.Sns) ? record.Sns : undefined;
      if (!sns || typeof sns.Message !== 'string')
        return { kind: 'ignored', source: 'unknown', reason: 'not_an_sns_record' };
      try {
        return parseProviderEvent(JSON.parse(sns.Message));
      } catch {
        return { kind: 'ignored', source: 'unknown', reason: 'sns_message_not_json' };
      }
    });
  }
  if ('detail' in event) {
    if (event.source === 'aws.ses') return [parseSesEvent(event.detail)];
    if (event.source === 'aws.sms-voice') return [parseSmsEvent(event.detail)];
    return [parseProviderEvent(event.detail)];
  }
  return [parseProviderEvent(event)];
};

/**
 * One SQS message body of the evidence queue: an EventBridge event (the rule's SQS target delivers the
 * whole event), or an SNS notification (an SNS → SQS subscription delivers the envelope, the provider
 * event as its `Message` string).
 */
export const parseQueuedEvent = (body: string): ParsedEvent[] => {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return [{ kind: 'ignored', source: 'unknown', reason: 'queued_body_not_json' }];
  }
  if (isObject(value) && value.Type === 'Notification' && typeof value.Message === 'string') {
    try {
      return [parseProviderEvent(JSON.parse(value.Message))];
    } catch {
      return [{ kind: 'ignored', source: 'unknown', reason: 'sns_message_not_json' }];
    }
  }
  return parseLambdaEvent(value);
};

/** Whether a Lambda event is an SQS batch (the evidence queue) rather than a direct invocation. */
export const isSqsBatch = (event: unknown): boolean =>
  isObject(event) &&
  Array.isArray(event.Records) &&
  event.Records.length > 0 &&
  event.Records.every((r) => isObject(r) && r.eventSource === 'aws:sqs' && typeof r.body === 'string');
