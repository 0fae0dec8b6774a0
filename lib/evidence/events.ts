import { z } from 'zod';
import { KEY_TAG } from '../transports/labels.js';

/**
 * Provider events, read into one shape the recorder understands. Only what evidence needs is read:
 * the key hash we put on the message, the provider's message id, and the outcome. Addresses in the
 * events (`mail.destination`, `destinationPhoneNumber`) are never copied out of the raw event.
 */
export interface Evidence {
  source: 'ses' | 'sms';
  /** Recorded on the row; the same provider event seen twice is recorded once. */
  evidenceId: string;
  /** The 64-hex dedupe-key hash carried in SES `mail.tags` / SMS `context`. */
  idempotencyKey: string;
  outcome: 'accepted' | 'rejected';
  providerMessageId: string;
  /** Short machine-readable reason for the history entry (`ses:Bounce:Permanent`, `sms:DELIVERED`). */
  why: string;
}

export type ParsedEvent =
  | { kind: 'evidence'; evidence: Evidence }
  | { kind: 'ignored'; source: 'ses' | 'sms' | 'unknown'; reason: string };

const KEY_SHAPE = /^[a-f0-9]{64}$/;

// --- SES v2 configuration-set events (EventBridge `detail`, or an SNS message) -----------------------

const SesEventSchema = z.object({
  eventType: z.string(),
  mail: z.object({
    messageId: z.string().min(1),
    tags: z.record(z.string(), z.array(z.string())).optional(),
  }),
  bounce: z.object({ bounceType: z.string().optional(), bounceSubType: z.string().optional() }).optional(),
});

/** SES took the message (it may still be travelling); the ledger's `accepted` means exactly that. */
const SES_ACCEPTED = new Set(['Send', 'Delivery', 'DeliveryDelay', 'Complaint', 'Open', 'Click']);
/** SES will not deliver this message: a definitive failure that may authorize a fallback channel. */
const SES_REJECTED = new Set(['Bounce', 'Reject', 'RenderingFailure', 'Rendering Failure']);

export const parseSesEvent = (detail: unknown): ParsedEvent => {
  const parsed = SesEventSchema.safeParse(detail);
  if (!parsed.success) return { kind: 'ignored', source: 'ses', reason: 'unreadable_ses_event' };
  const { eventType, mail, bounce } = parsed.data;
  const key = mail.tags?.[KEY_TAG]?.[0];
  if (!key || !KEY_SHAPE.test(key)) return { kind: 'ignored', source: 'ses', reason: 'no_sendproof_key' };
  const type = eventType.replace(/\s+/g, '');
  let outcome: Evidence['outcome'];
  let why = `ses:${type}`;
  if (SES_ACCEPTED.has(eventType)) outcome = 'accepted';
  else if (SES_REJECTED.has(eventType)) {
    outcome = 'rejected';
    if (bounce?.bounceType)
      why = `${why}:${bounce.bounceType}${bounce.bounceSubType ? `/${bounce.bounceSubType}` : ''}`;
  } else return { kind: 'ignored', source: 'ses', reason: `ses_event_type_not_evidence:${type}` };
  return {
    kind: 'evidence',
    evidence: {
      source: 'ses',
      evidenceId: `ses:${mail.messageId}:${type}`,
      idempotencyKey: key,
      outcome,
      providerMessageId: mail.messageId,
      why: why.slice(0, 120),
    },
  };
};

// --- AWS End User Messaging SMS events (an SNS message, or EventBridge `detail`) ---------------------

const SmsEventSchema = z.object({
  eventType: z.string().optional(),
  messageId: z.string().min(1),
  messageStatus: z.string().optional(),
  isFinal: z.boolean().optional(),
  context: z.record(z.string(), z.string()).optional(),
});

/** AWS accepted the SendTextMessage request (UNKNOWN: the carrier never reported a final status). */
const SMS_ACCEPTED = new Set(['SUCCESSFUL', 'DELIVERED', 'PENDING', 'QUEUED', 'UNKNOWN']);
/** The text did not and will not reach the handset. */
const SMS_REJECTED = new Set([
  'FAILED',
  'BLOCKED',
  'CARRIER_BLOCKED',
  'PROTECT_BLOCKED',
  'UNREACHABLE',
  'CARRIER_UNREACHABLE',
  'INVALID',
  'INVALID_MESSAGE',
  'TTL_EXPIRED',
  'SPAM',
  'OPTED_OUT',
  'MAX_PRICE_EXCEEDED',
  'DESTINATION_COUNTRY_BLOCKED',
]);

export const parseSmsEvent = (message: unknown): ParsedEvent => {
  const parsed = SmsEventSchema.safeParse(message);
  if (!parsed.success) return { kind: 'ignored', source: 'sms', reason: 'unreadable_sms_event' };
  const { eventType, messageId, messageStatus, isFinal, context } = parsed.data;
  const key = context?.[KEY_TAG];
  if (!key || !KEY_SHAPE.test(key)) return { kind: 'ignored', source: 'sms', reason: 'no_sendproof_key' };
  const status = (messageStatus ?? eventType?.replace(/^TEXT_/, '') ?? '').toUpperCase();
  let outcome: Evidence['outcome'];
  if (SMS_ACCEPTED.has(status)) outcome = 'accepted';
  // A failure that is not final may still turn into a delivery; only a final one is evidence of failure.
  else if (SMS_REJECTED.has(status) && isFinal !== false) outcome = 'rejected';
  else return { kind: 'ignored', source: 'sms', reason: `sms_status_not_evidence:${status || 'none'}` };
  return {
    kind: 'evidence',
    evidence: {
      source: 'sms',
      evidenceId: `sms:${messageId}:${status}`,
      idempotencyKey: key,
      outcome,
      providerMessageId: messageId,
      why: `sms:${status}`.slice(0, 120),
    },
  };
};

// --- Lambda event envelopes ---------------------------------------------------------------------------

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** An SES event has `mail`; an SMS event has `messageId` at the top level. */
const parseProviderEvent = (value: unknown): ParsedEvent => {
  if (isObject(value) && isObject(value.mail)) return parseSesEvent(value);
  if (isObject(value) && typeof value.messageId === 'string') return parseSmsEvent(value);
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
