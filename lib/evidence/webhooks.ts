import { EventWebhook } from '@sendgrid/eventwebhook';
import { Webhook, WebhookVerificationError } from 'svix';
// The request validator only: the package root loads the whole REST client.
import { validateRequest } from 'twilio/lib/webhooks/webhooks.js';
import { z } from 'zod';
import { KEY_TAG, ROW_TAG } from '../transports/labels.js';
import { evidence, KEY_SHAPE, type ParsedEvent, timeOf } from './events.js';
import type { EvidenceFact } from './facts.js';

export const WEBHOOK_PROVIDERS = ['resend', 'twilio', 'sendgrid'] as const;
export type WebhookProvider = (typeof WEBHOOK_PROVIDERS)[number];

/** The custom argument (SendGrid) / query parameter (Twilio status callback) carrying the key hash. */
export { SENDGRID_KEY_ARG } from '../transports/SendGridTransport.js';

import { SENDGRID_KEY_ARG, SENDGRID_ROW_ARG } from '../transports/SendGridTransport.js';
export const TWILIO_KEY_PARAM = 'k';
/** The status callback's query parameter carrying the row label (lib/domain/keys.ts rowLabelOf). */
export const TWILIO_ROW_PARAM = 'r';

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
  resend: z.string().min(8).optional(),
  twilio: z.string().min(8).optional(),
  sendgrid: z.string().min(40).optional(),
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
  'email.failed': 'rejected',
};

const ResendEventSchema = z.object({
  type: z.string(),
  created_at: z.string().optional(),
  data: z.object({
    email_id: z.string().min(1),
    tags: z
      .union([z.array(z.object({ name: z.string(), value: z.string() })), z.record(z.string(), z.string())])
      .optional(),
    bounce: z.object({ type: z.string().optional(), subType: z.string().optional() }).optional(),
  }),
});

export const parseResendEvent = (payload: unknown): ParsedEvent => {
  const parsed = ResendEventSchema.safeParse(payload);
  if (!parsed.success) return { kind: 'ignored', source: 'resend', reason: 'unreadable_resend_event' };
  const { type, created_at, data } = parsed.data;
  const tags = Array.isArray(data.tags)
    ? Object.fromEntries(data.tags.map((t) => [t.name, t.value]))
    : (data.tags ?? {});
  const key = tags[KEY_TAG];
  if (!key || !KEY_SHAPE.test(key)) return { kind: 'ignored', source: 'resend', reason: 'no_sendproof_key' };
  let fact = RESEND_FACTS[type];
  let why = `resend:${type}`;
  if (type === 'email.bounced') {
    // Resend: "the recipient's mail server permanently rejected the email", unless it says Transient.
    const transient = /transient/i.test(data.bounce?.type ?? '');
    fact = transient ? 'bounced_transient' : 'bounced_permanent';
    why = `${why}:${data.bounce?.type ?? 'Permanent'}${data.bounce?.subType ? `/${data.bounce.subType}` : ''}`;
  }
  if (!fact) return { kind: 'ignored', source: 'resend', reason: `resend_event_not_evidence:${type}` };
  const at = timeOf(created_at);
  return evidence({
    source: 'resend',
    evidenceId: `resend:${data.email_id}:${type}`,
    idempotencyKey: key,
    rowLabel: tags[ROW_TAG],
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
};

export const parseTwilioCallback = (params: Readonly<Record<string, string>>, url: string): ParsedEvent => {
  const query = new URL(url).searchParams;
  const key = query.get(TWILIO_KEY_PARAM) ?? '';
  if (!KEY_SHAPE.test(key)) return { kind: 'ignored', source: 'twilio', reason: 'no_sendproof_key' };
  const sid = params.MessageSid ?? params.SmsSid;
  const status = (params.MessageStatus ?? params.SmsStatus ?? '').toLowerCase();
  if (!sid) return { kind: 'ignored', source: 'twilio', reason: 'unreadable_twilio_callback' };
  const fact = TWILIO_FACTS[status];
  if (!fact)
    return { kind: 'ignored', source: 'twilio', reason: `twilio_status_not_evidence:${status || 'none'}` };
  return evidence({
    source: 'twilio',
    evidenceId: `twilio:${sid}:${status}`,
    idempotencyKey: key,
    rowLabel: query.get(TWILIO_ROW_PARAM) ?? undefined,
    fact,
    providerMessageId: sid,
    why: `twilio:${status}${params.ErrorCode ? `:${params.ErrorCode}` : ''}`,
  });
};

// --- SendGrid Event Webhook -------------------------------------------------------------------------

const SendGridEventSchema = z.object({
  event: z.string(),
  sg_event_id: z.string().min(1),
  sg_message_id: z.string().optional(),
  timestamp: z.number().optional(),
  type: z.string().optional(),
  [SENDGRID_KEY_ARG]: z.string().optional(),
  [SENDGRID_ROW_ARG]: z.string().optional(),
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

export const parseSendGridEvent = (value: unknown): ParsedEvent => {
  const parsed = SendGridEventSchema.safeParse(value);
  if (!parsed.success) return { kind: 'ignored', source: 'sendgrid', reason: 'unreadable_sendgrid_event' };
  const e = parsed.data;
  const key = e[SENDGRID_KEY_ARG] ?? '';
  if (!KEY_SHAPE.test(key)) return { kind: 'ignored', source: 'sendgrid', reason: 'no_sendproof_key' };
  let fact = SENDGRID_FACTS[e.event];
  // `bounce` with type `blocked` is SendGrid's soft bounce; type `bounce` is a hard one.
  if (e.event === 'bounce') fact = e.type === 'blocked' ? 'bounced_transient' : 'bounced_permanent';
  if (!fact) return { kind: 'ignored', source: 'sendgrid', reason: `sendgrid_event_not_evidence:${e.event}` };
  // sg_message_id is `<x-message-id>.<filter info>`; the Mail Send answer gives the part before the dot.
  const messageId = (e.sg_message_id ?? '').split('.')[0] || e.sg_event_id;
  return evidence({
    source: 'sendgrid',
    evidenceId: `sendgrid:${e.sg_event_id}`,
    idempotencyKey: key,
    rowLabel: e[SENDGRID_ROW_ARG],
    fact,
    providerMessageId: messageId,
    why: `sendgrid:${e.event}${e.type ? `:${e.type}` : ''}`,
    ...(e.timestamp !== undefined ? { at: e.timestamp * 1000 } : {}),
  });
};

// --- verification -----------------------------------------------------------------------------------

const isProvider = (value: string): value is WebhookProvider =>
  (WEBHOOK_PROVIDERS as readonly string[]).includes(value);

const formParams = (body: string): Record<string, string> => Object.fromEntries(new URLSearchParams(body));

/**
 * Verifies a provider's signature with the provider's own library, then parses. Nothing is parsed, and
 * nothing may reach the ledger, before the signature holds:
 * - Resend: Svix `Webhook.verify` (HMAC over id.timestamp.body; stale or future timestamps refused);
 * - Twilio: `validateRequest` (HMAC-SHA1 over the URL and sorted form params, keyed by the auth token).
 *   Twilio signs no timestamp: a replayed callback verifies, and is recorded once (same event id);
 * - SendGrid: `EventWebhook.verifySignature` (ECDSA P-256 over timestamp + body), and the timestamp
 *   must be within REPLAY_TOLERANCE_SECONDS of now.
 */
export const verifyWebhook = (
  request: WebhookRequest,
  secrets: WebhookSecrets,
  nowMs: number = Date.now(),
): WebhookVerdict => {
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
      try {
        new Webhook(secrets.resend).verify(body, svixHeaders);
      } catch (error) {
        if (error instanceof WebhookVerificationError && /timestamp/i.test(error.message))
          return refuse('replayed');
        return refuse('forged');
      }
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
      if (!validateRequest(secrets.twilio, signature, request.url, params)) return refuse('forged');
      return { ok: true, provider, events: [parseTwilioCallback(params, request.url)] };
    }
    case 'sendgrid': {
      if (!secrets.sendgrid) return refuse('not_configured');
      const signature = headers['x-twilio-email-event-webhook-signature'];
      const timestamp = headers['x-twilio-email-event-webhook-timestamp'];
      if (!signature || !timestamp) return refuse('unsigned');
      const verifier = new EventWebhook();
      let valid = false;
      try {
        valid = verifier.verifySignature(
          verifier.convertPublicKeyToECDSA(secrets.sendgrid),
          body,
          signature,
          timestamp,
        );
      } catch {
        valid = false;
      }
      if (!valid) return refuse('forged');
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
