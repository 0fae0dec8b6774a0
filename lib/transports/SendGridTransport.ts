import { type Clock, systemClock } from '../domain/clock.js';
import { classifyExchangeFailure, classifyHttpStatus, held, retryAfterFrom } from './classify.js';
import { type ExchangeTimeouts, exchange } from './HttpExchange.js';
import type {
  OutboundMessage,
  RejectionCause,
  SendResult,
  Transport,
  TransportCapabilities,
} from './port.js';
import { readJson, resolveCredentials } from './wire.js';

export interface SendGridTransportOptions {
  /** Default https://api.sendgrid.com; tests point it at a loopback fake. */
  baseUrl?: string;
  /** A verified sender (`receipts@clinic.example`). */
  from: string;
  /** Resolves the API key (fetched from Secrets Manager by the caller); called once per request. */
  apiKey: () => Promise<string>;
  timeouts?: ExchangeTimeouts;
  clock?: Clock;
}

/** The custom argument that carries the label into every Event Webhook event (lib/evidence/webhooks.ts). */
export const SENDGRID_KEY_ARG = 'sendproof_key';

interface SendGridErrors {
  errors?: Array<{ message?: string; field?: string | null }>;
}

/**
 * SendGrid's documented Mail Send errors (v3 API reference, "Responses" and "Errors") and who causes each
 * refusal. The `errors[].field` names the part of the request (kept; it is a path, not a value); the
 * messages can quote the address, so they are read to tell documented variants apart and never kept.
 */
export const classifySendGridError = (
  status: number,
  errors: NonNullable<SendGridErrors['errors']>,
  detail: { reason: string; retryAfterMs: number | undefined; nowMs: number },
): SendResult => {
  const { reason, retryAfterMs, nowMs } = detail;
  if (status === 429)
    return { kind: 'retryable', reason, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  const messages = errors.map((e) => (typeof e.message === 'string' ? e.message : '')).join(' ');
  // "You are temporarily blocked from sending emails due to repeated bad requests": every send is refused
  // for a while, so the transport waits; the rows are not rejected one by one.
  if (status === 403 && /temporarily blocked|too many bad requests/i.test(messages))
    return held(`${reason}:temporary_block`, 'temporary_block', { retryAfterMs, nowMs });
  const field = errors.find(
    (e) => typeof e.field === 'string' && /^[a-z_.[\]0-9]{1,60}$/.test(e.field),
  )?.field;
  let cause: RejectionCause = 'provider';
  if (status === 413) cause = 'content';
  else if (field && /^personalizations(\.\d+|\[\d+\])?\.(to|cc|bcc)\b/.test(field)) cause = 'recipient';
  else if (field && /^(content|attachments|subject)\b/.test(field)) cause = 'content';
  return classifyHttpStatus(status, { reason, code: field ? `${reason}:${field}` : reason, cause });
};

/**
 * SendGrid v3 Mail Send (`POST /v3/mail/send`) over plain HTTP, no SDK. SendGrid has no idempotency key
 * and no lookup by our key: an answer lost after the request left is ambiguous, and only the Event
 * Webhook (signed, carrying `custom_args.sendproof_key`) can settle it.
 *
 * Status codes (SendGrid v3 API reference, "Responses" and "Errors"): 202 accepted and queued, with the
 * message id in `X-Message-Id`; 400 bad request, 401 requires authentication, 403 sender not verified or
 * temporarily blocked for repeated bad requests, 404, 405, 406, 413 payload too large, 451 data residency:
 * refused before processing, nothing was sent; 429 rate limited (retry, honouring `Retry-After` or
 * `X-RateLimit-Reset`); 500/503 after the request reached SendGrid: it may have been queued (ambiguous).
 */
export class SendGridTransport implements Transport {
  readonly name = 'sendgrid';
  readonly channel = 'email' as const;
  readonly capabilities: TransportCapabilities = {
    idempotencyKey: false,
    keyRetentionSeconds: 0,
    lookupByKey: false,
    lookupByProviderId: false,
    cancel: false,
    pushEvidence: true,
  };
  private readonly baseUrl: string;
  private readonly clock: Clock;

  constructor(private readonly options: SendGridTransportOptions) {
    this.baseUrl = (options.baseUrl ?? 'https://api.sendgrid.com').replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
  }

  async send(message: OutboundMessage, _idempotencyKey: string): Promise<SendResult> {
    const content = [
      { type: 'text/plain', value: message.text },
      ...(message.html !== undefined ? [{ type: 'text/html', value: message.html }] : []),
    ];
    const body = {
      personalizations: [{ to: [{ email: message.to }] }],
      from: { email: this.options.from },
      subject: message.subject ?? '',
      content,
      ...(message.attachments?.length
        ? {
            attachments: message.attachments.map((a) => ({
              filename: a.filename,
              type: a.contentType,
              content: Buffer.from(a.content).toString('base64'),
              disposition: 'attachment',
            })),
          }
        : {}),
      // Echoed on every event: the label, and nothing readable (lib/transports/labels.ts).
      custom_args: { [SENDGRID_KEY_ARG]: message.label },
    };
    const apiKey = await resolveCredentials(this.options.apiKey);
    if (!apiKey.ok) return { kind: 'retryable', reason: apiKey.reason };
    const outcome = await exchange({
      method: 'POST',
      url: `${this.baseUrl}/v3/mail/send`,
      headers: { authorization: `Bearer ${apiKey.value}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...this.options.timeouts,
    });
    if (outcome.kind === 'failure') return classifyExchangeFailure(outcome);
    const { status, headers } = outcome;
    if (status === 202 || status === 200) {
      const id = headers['x-message-id'];
      const messageId = Array.isArray(id) ? id[0] : id;
      if (!messageId) return { kind: 'ambiguous', reason: 'accepted_without_message_id' };
      return { kind: 'accepted', providerMessageId: messageId };
    }
    const reason = `sendgrid_${status}`;
    const retryAfterMs =
      status === 429 || status === 403
        ? (retryAfterFrom(headers, this.clock.now()) ?? this.rateLimitReset(headers))
        : undefined;
    return classifySendGridError(status, readJson<SendGridErrors>(outcome.body)?.errors ?? [], {
      reason,
      retryAfterMs,
      nowMs: this.clock.now(),
    });
  }

  /** `X-RateLimit-Reset` is the epoch second when the window resets. */
  private rateLimitReset(headers: Record<string, string | string[] | undefined>): number | undefined {
    const raw = headers['x-ratelimit-reset'];
    const seconds = Number(Array.isArray(raw) ? raw[0] : raw);
    if (!Number.isFinite(seconds) || seconds <= 0) return undefined;
    return Math.max(0, seconds * 1000 - this.clock.now());
  }
}
