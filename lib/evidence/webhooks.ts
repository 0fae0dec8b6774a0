import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { KEY_TAG } from '../transports/labels.js';
import { bounceFact, evidence, LABEL_SHAPE, type ParsedEvent, timeOf } from './events.js';
import type { EvidenceFact } from './facts.js';
import type { AccountSignal, OptSignal } from './signals.js';

export const WEBHOOK_PROVIDERS = ['resend', 'twilio', 'sendgrid'] as const;
export type WebhookProvider = (typeof WEBHOOK_PROVIDERS)[number];

/** The custom argument (SendGrid) / query parameter (Twilio status callback) carrying the label. */
export { SENDGRID_KEY_ARG } from '../transports/SendGridTransport.js';
export { TWILIO_KEY_PARAM } from '../transports/TwilioTransport.js';

import { SENDGRID_KEY_ARG } from '../transports/SendGridTransport.js';
import { TWILIO_KEY_PARAM } from '../transports/TwilioTransport.js';

/** Signing material, from Secrets Manager in AWS (one JSON secret), from the local stack's state locally. */
export interface WebhookSecrets {
  /** Resend (Svix) endpoint secret, `whsec_…`. */
  resend?: string;
  /** Twilio auth token: Twilio signs status callbacks with it. */
  twilio?: string;
  /** SendGrid Event Webhook verification key (base64 DER of the P-256 public key). */
  sendgrid?: string;
}
export const WebhookSecretsSchema = z.strictObject({
  resend: z.optional(z.string().check(z.minLength(8))),
  twilio: z.optional(z.string().check(z.minLength(8))),
  sendgrid: z.optional(z.string().check(z.minLength(40))),
});

export interface WebhookRequest {
  provider: string;
  /** The public URL the provider called, query included (Twilio signs it). */
  url: string;
  /** Header names in lower case. */
  headers: Readonly<Record<string, string | undefined>>;
  /** The raw body, exactly as received (every signature covers the bytes). */
  body: string;
}

export type RefusalReason = 'unknown_provider' | 'not_configured' | 'unsigned' | 'forged' | 'replayed';

export type WebhookVerdict =
  | { ok: true; provider: WebhookProvider; events: ParsedEvent[] }
  | { ok: false; provider: string; reason: RefusalReason };

/** Svix's own tolerance is 5 minutes; SendGrid's timestamp is checked against the same window. */
export const REPLAY_TOLERANCE_SECONDS = 300;

// --- Resend (Svix) ------------------------------------------------------------------------------------

const RESEND_FACTS: Readonly<Record<string, EvidenceFact>> = {
  'email.sent': 'sent',
  'email.delivered': 'delivered',
  'email.delivery_delayed': 'delayed',
  'email.complained': 'complained',
  'email.opened': 'engaged',
  'email.clicked': 'engaged',
  // "failed to send due to an error" (invalid recipients, API key, domain, quota…): Resend did not send it.
  'email.failed': 'rejected',
  // "the email is suppressed by Resend" (its account-level suppression list): not sent, suppressed there.
  'email.suppressed': 'provider_suppressed',
};

/**
 * Documented Resend email events that are not evidence about a message we sent, and why:
 * - email.scheduled: Resend holds it for `scheduled_at`; the send's own answer already made the row
 *   `provider_scheduled`, and `email.sent` follows at the scheduled time;
 * - email.received: an inbound email to a Resend receiving address; Sendproof only sends.
 */
const RESEND_NOT_EVIDENCE: Readonly<Record<string, string>> = {
  'email.scheduled': 'resend_email_scheduled_is_the_send_answer',
  'email.received': 'resend_email_received_is_inbound',
};

const ResendEventSchema = z.object({
  type: z.string(),
  created_at: z.optional(z.string()),
  data: z.object({
    email_id: z.string().check(z.minLength(1)),
    tags: z.optional(
      z.union([z.array(z.object({ name: z.string(), value: z.string() })), z.record(z.string(), z.string())]),
    ),
    bounce: z.optional(z.object({ type: z.optional(z.string()), subType: z.optional(z.string()) })),
  }),
});
const ResendTypeSchema = z.object({ type: z.string() });

export const parseResendEvent = (payload: unknown): ParsedEvent => {
  const declared = ResendTypeSchema.safeParse(payload);
  const skip = declared.success ? RESEND_NOT_EVIDENCE[declared.data.type] : undefined;
  if (skip) return { kind: 'ignored', source: 'resend', reason: skip };
  const parsed = ResendEventSchema.safeParse(payload);
  if (!parsed.success) return { kind: 'ignored', source: 'resend', reason: 'unreadable_resend_event' };
  const { type, created_at, data } = parsed.data;
  const tags = Array.isArray(data.tags)
    ? Object.fromEntries(data.tags.map((t) => [t.name, t.value]))
    : (data.tags ?? {});
  const label = tags[KEY_TAG];
  if (!label || !LABEL_SHAPE.test(label))
    return { kind: 'ignored', source: 'resend', reason: 'no_sendproof_key' };
  let fact = RESEND_FACTS[type];
  let why = `resend:${type}`;
  if (type === 'email.bounced') {
    // The event is "the recipient's mail server permanently rejected the email"; a bounce that names its
    // type follows the one rule every provider's bounce does (Undetermined and Temporary are soft).
    const bounceType = data.bounce?.type ?? 'Permanent';
    fact = bounceFact(bounceType, data.bounce?.subType);
    why = `${why}:${bounceType}${data.bounce?.subType ? `/${data.bounce.subType}` : ''}`;
  }
  if (!fact) return { kind: 'ignored', source: 'resend', reason: `resend_event_not_evidence:${type}` };
  const at = timeOf(created_at);
  return evidence({
    source: 'resend',
    evidenceId: `resend:${data.email_id}:${type}`,
    label,
    fact,
    providerMessageId: data.email_id,
    why,
    ...(at !== undefined ? { at } : {}),
  });
};

// --- Twilio status callbacks ------------------------------------------------------------------------

const TWILIO_FACTS: Readonly<Record<string, EvidenceFact>> = {
  queued: 'sent',
  accepted: 'sent',
  sending: 'sent',
  sent: 'sent',
  delivered: 'delivered',
  read: 'engaged',
  // Twilio: "undelivered" — the carrier did not deliver; "failed" — it could not be sent at all.
  undelivered: 'carrier_failed',
  failed: 'carrier_failed',
  // A message canceled before it was sent (a scheduled one): Twilio did not send it and will not.
  canceled: 'rejected',
  // Part of it reached the handset: Twilio had it; neither a delivery nor a failure to fall back on.
  partially_delivered: 'partially_delivered',
};

/**
 * Documented MessageStatus values that are not evidence, and why: `scheduled` is the initial status of a
 * scheduled message (Twilio sends no callback for an initial status; the send answer already made the row
 * `provider_scheduled`); `receiving` and `received` are inbound messages.
 */
const TWILIO_NOT_EVIDENCE: Readonly<Record<string, string>> = {
  scheduled: 'twilio_scheduled_is_the_send_answer',
  receiving: 'twilio_inbound_message',
  received: 'twilio_inbound_message',
};

/**
 * An inbound message webhook ("Twilio's request to your incoming message Webhook URL"). With Advanced
 * Opt-Out on a Messaging Service, Twilio adds `OptOutType` (STOP, START or HELP) to a message whose whole
 * body is an opt-out, opt-in or help keyword; that parameter, and nothing read from the body, decides.
 */
export const parseTwilioInbound = (params: Readonly<Record<string, string>>): ParsedEvent => {
  const sid = params.MessageSid ?? params.SmsSid;
  const type = (params.OptOutType ?? '').toUpperCase();
  if (!sid || !params.From) return { kind: 'ignored', source: 'twilio', reason: 'unreadable_twilio_inbound' };
  if (type !== 'STOP' && type !== 'START')
    return { kind: 'ignored', source: 'twilio', reason: 'twilio_inbound_message' };
  const signal: OptSignal = {
    kind: type === 'STOP' ? 'opt_out' : 'opt_in',
    channel: 'sms',
    provider: 'twilio',
    phone: params.From,
    ...(params.To ? { ourNumber: params.To } : {}),
    keyword: type,
    evidenceId: `twilio:inbound:${sid}`,
  };
  return { kind: 'ignored', source: 'twilio', reason: `twilio_inbound_${signal.kind}`, signal };
};

export const parseTwilioCallback = (params: Readonly<Record<string, string>>, url: string): ParsedEvent => {
  const query = new URL(url).searchParams;
  const declared = (params.MessageStatus ?? params.SmsStatus ?? '').toLowerCase();
  // An inbound message (a reply) is not a status callback of ours: it may carry an opt-out signal.
  if (params.OptOutType !== undefined || declared === 'received' || declared === 'receiving')
    if (!query.get(TWILIO_KEY_PARAM)) return parseTwilioInbound(params);
  const label = query.get(TWILIO_KEY_PARAM) ?? '';
  if (!LABEL_SHAPE.test(label)) return { kind: 'ignored', source: 'twilio', reason: 'no_sendproof_key' };
  const sid = params.MessageSid ?? params.SmsSid;
  const status = (params.MessageStatus ?? params.SmsStatus ?? '').toLowerCase();
  if (!sid) return { kind: 'ignored', source: 'twilio', reason: 'unreadable_twilio_callback' };
  const skip = TWILIO_NOT_EVIDENCE[status];
  if (skip) return { kind: 'ignored', source: 'twilio', reason: skip };
  const fact = TWILIO_FACTS[status];
  if (!fact)
    return { kind: 'ignored', source: 'twilio', reason: `twilio_status_not_evidence:${status || 'none'}` };
  return evidence({
    source: 'twilio',
    evidenceId: `twilio:${sid}:${status}`,
    label,
    fact,
    providerMessageId: sid,
    why: `twilio:${status}${params.ErrorCode ? `:${params.ErrorCode}` : ''}`,
  });
};

// --- SendGrid Event Webhook -------------------------------------------------------------------------

const SendGridEventSchema = z.object({
  event: z.string(),
  sg_event_id: z.string().check(z.minLength(1)),
  sg_message_id: z.optional(z.string()),
  'smtp-id': z.optional(z.string()),
  // The property table types it String ("a UNIX timestamp"); the examples send a number. Both are read.
  timestamp: z.optional(z.union([z.number(), z.string().check(z.regex(/^\s*\d+(\.\d+)?\s*$/))])),
  type: z.optional(z.string()),
  reason: z.optional(z.string()),
  [SENDGRID_KEY_ARG]: z.optional(z.string()),
});

const SENDGRID_FACTS: Readonly<Record<string, EvidenceFact>> = {
  processed: 'sent',
  delivered: 'delivered',
  deferred: 'delayed',
  dropped: 'rejected',
  spamreport: 'complained',
  open: 'engaged',
  click: 'engaged',
};

/**
 * Documented SendGrid events that are not evidence about one message, and why: subscription changes are
 * the recipient's list preferences (a later send to an unsubscribed address comes back as `dropped`,
 * which is evidence); `account_status_change` is about our account, not a message (it carries the
 * account signal instead).
 */
const SENDGRID_NOT_EVIDENCE: Readonly<Record<string, string>> = {
  unsubscribe: 'sendgrid_subscription_preference',
  group_unsubscribe: 'sendgrid_subscription_preference',
  group_resubscribe: 'sendgrid_subscription_preference',
  account_status_change: 'sendgrid_account_status_change',
};

/** Drop reasons that name SendGrid's own suppression lists ("Bounced Address", "Unsubscribed Address", "Spam Reporting Address"). */
const SENDGRID_SUPPRESSION_DROP = /^(bounced|unsubscribed|spam reporting) address$/i;

/** What each documented `account_status_change` type does to our mail ("type property" table). */
const SENDGRID_ACCOUNT_EFFECT: Readonly<Record<string, AccountSignal['effect']>> = {
  compliance_suspend: 'held',
  compliance_deactivate: 'held',
  compliance_ban: 'held',
  reactivate: 'restored',
};

/**
 * The id the Mail Send answer gave (`X-Message-Id`). `sg_message_id` is that id followed by SendGrid's
 * filter suffix (`<id>.filter0001.16648.5515E0B88.0`, `<id>.stfilter-015.5185.55F883172.0`); the id
 * itself may contain dots (the older form, "pulled from the smtp-id": `14c5d75ce93.dfd.64b469`), so the
 * suffix is cut at its filter segment, never at the first dot, and surrounding spaces (one documented
 * example has a leading one) are dropped. Without `sg_message_id` (an asynchronous bounce) the id is
 * the local part of `smtp-id`, when the event has one; otherwise there is none (empty).
 */
export const sendGridMessageId = (sgMessageId: string | undefined, smtpId: string | undefined): string => {
  const raw = (sgMessageId ?? '').trim();
  if (raw) return /^(.+?)\.[a-z]*filter[^.]*(\.|$)/i.exec(raw)?.[1] ?? raw;
  return /^<?([^@<>\s]+)@/.exec((smtpId ?? '').trim())?.[1] ?? '';
};

export const parseSendGridEvent = (value: unknown): ParsedEvent => {
  const parsed = SendGridEventSchema.safeParse(value);
  if (!parsed.success) return { kind: 'ignored', source: 'sendgrid', reason: 'unreadable_sendgrid_event' };
  const e = parsed.data;
  const at = e.timestamp === undefined ? undefined : Number(e.timestamp) * 1000;
  if (e.event === 'account_status_change') {
    const effect = SENDGRID_ACCOUNT_EFFECT[e.type ?? ''];
    const signal: AccountSignal | undefined = effect
      ? {
          kind: 'account_status',
          provider: 'sendgrid',
          status: e.type!,
          effect,
          evidenceId: `sendgrid:${e.sg_event_id}`,
          ...(at !== undefined ? { at } : {}),
        }
      : undefined;
    return {
      kind: 'ignored',
      source: 'sendgrid',
      reason: SENDGRID_NOT_EVIDENCE.account_status_change!,
      ...(signal ? { signal } : {}),
    };
  }
  const skip = SENDGRID_NOT_EVIDENCE[e.event];
  if (skip) return { kind: 'ignored', source: 'sendgrid', reason: skip };
  const label = e[SENDGRID_KEY_ARG] ?? '';
  if (!LABEL_SHAPE.test(label)) return { kind: 'ignored', source: 'sendgrid', reason: 'no_sendproof_key' };
  let fact = SENDGRID_FACTS[e.event];
  // `bounce` with type `blocked` is SendGrid's soft bounce; type `bounce` is a hard one.
  if (e.event === 'bounce') fact = e.type === 'blocked' ? 'bounced_transient' : 'bounced_permanent';
  // Dropped because the address is on one of SendGrid's suppression lists: not sent, suppressed there.
  if (e.event === 'dropped' && SENDGRID_SUPPRESSION_DROP.test(e.reason ?? '')) fact = 'provider_suppressed';
  if (!fact) return { kind: 'ignored', source: 'sendgrid', reason: `sendgrid_event_not_evidence:${e.event}` };
  const dropReason =
    e.event === 'dropped' && e.reason && /^[A-Za-z ]{1,40}$/.test(e.reason)
      ? `:${e.reason.toLowerCase().replace(/ /g, '_')}`
      : '';
  return evidence({
    source: 'sendgrid',
    evidenceId: `sendgrid:${e.sg_event_id}`,
    label,
    fact,
    providerMessageId: sendGridMessageId(e.sg_message_id, e['smtp-id']),
    why: `sendgrid:${e.event}${e.type ? `:${e.type}` : ''}${dropReason}`,
    ...(at !== undefined && Number.isFinite(at) ? { at } : {}),
  });
};

// --- verification -----------------------------------------------------------------------------------

const isProvider = (value: string): value is WebhookProvider =>
  (WEBHOOK_PROVIDERS as readonly string[]).includes(value);

const formParams = (body: string): Record<string, string> => Object.fromEntries(new URLSearchParams(body));

/**
 * Each provider's verifier, its own chunk in a bundle: a cold start of the webhook function loads none of
 * Svix, Twilio's validator or SendGrid's ECDSA library, and a request loads only its provider's (the
 * module cache keeps it for the next one).
 */
const VERIFIERS = {
  resend: () => import('./verifiers/resend.js'),
  twilio: () => import('./verifiers/twilio.js'),
  sendgrid: () => import('./verifiers/sendgrid.js'),
} as const;

/**
 * Verifies a provider's signature with the provider's own library, then parses. Nothing is parsed, and
 * nothing may reach the ledger, before the signature holds:
 * - Resend: Svix `Webhook.verify` (HMAC over id.timestamp.body; stale or future timestamps refused);
 * - Twilio: `validateRequest` (HMAC-SHA1 over the URL and sorted form params, keyed by the auth token).
 *   Twilio signs no timestamp: a replayed callback verifies, and is recorded once (same event id);
 * - SendGrid: `EventWebhook.verifySignature` (ECDSA P-256 over timestamp + body), and the timestamp
 *   must be within REPLAY_TOLERANCE_SECONDS of now.
 */
export const verifyWebhook = async (
  request: WebhookRequest,
  secrets: WebhookSecrets,
  nowMs: number = Date.now(),
): Promise<WebhookVerdict> => {
  const { provider, headers, body } = request;
  if (!isProvider(provider)) return { ok: false, provider, reason: 'unknown_provider' };
  const refuse = (reason: RefusalReason): WebhookVerdict => ({ ok: false, provider, reason });
  switch (provider) {
    case 'resend': {
      if (!secrets.resend) return refuse('not_configured');
      const svixHeaders = {
        'svix-id': headers['svix-id'] ?? '',
        'svix-timestamp': headers['svix-timestamp'] ?? '',
        'svix-signature': headers['svix-signature'] ?? '',
      };
      if (!svixHeaders['svix-id'] || !svixHeaders['svix-timestamp'] || !svixHeaders['svix-signature'])
        return refuse('unsigned');
      const { verifyResend } = await VERIFIERS.resend();
      const checked = verifyResend(secrets.resend, body, svixHeaders);
      if (checked !== 'valid') return refuse(checked);
      let payload: unknown;
      try {
        payload = JSON.parse(body);
      } catch {
        return {
          ok: true,
          provider,
          events: [{ kind: 'ignored', source: 'resend', reason: 'body_not_json' }],
        };
      }
      return { ok: true, provider, events: [parseResendEvent(payload)] };
    }
    case 'twilio': {
      if (!secrets.twilio) return refuse('not_configured');
      const signature = headers['x-twilio-signature'];
      if (!signature) return refuse('unsigned');
      const params = formParams(body);
      const { verifyTwilio } = await VERIFIERS.twilio();
      if (!verifyTwilio(secrets.twilio, signature, request.url, params)) return refuse('forged');
      return { ok: true, provider, events: [parseTwilioCallback(params, request.url)] };
    }
    case 'sendgrid': {
      if (!secrets.sendgrid) return refuse('not_configured');
      const signature = headers['x-twilio-email-event-webhook-signature'];
      const timestamp = headers['x-twilio-email-event-webhook-timestamp'];
      if (!signature || !timestamp) return refuse('unsigned');
      const { verifySendGrid } = await VERIFIERS.sendgrid();
      if (!verifySendGrid(secrets.sendgrid, body, signature, timestamp)) return refuse('forged');
      const seconds = Number(timestamp);
      if (!Number.isFinite(seconds) || Math.abs(nowMs / 1000 - seconds) > REPLAY_TOLERANCE_SECONDS)
        return refuse('replayed');
      let payload: unknown;
      try {
        payload = JSON.parse(body);
      } catch {
        return {
          ok: true,
          provider,
          events: [{ kind: 'ignored', source: 'sendgrid', reason: 'body_not_json' }],
        };
      }
      const list = Array.isArray(payload) ? payload : [payload];
      return { ok: true, provider, events: list.map(parseSendGridEvent) };
    }
  }
};
