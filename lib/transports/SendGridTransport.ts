import { type Clock, systemClock } from '../domain/clock.js';
import { rowLabelOf } from '../domain/keys.js';
import { classifyExchangeFailure, classifyHttpStatus, retryAfterFrom } from './classify.js';
import { type ExchangeTimeouts, exchange } from './HttpExchange.js';
import type { OutboundMessage, SendResult, Transport, TransportCapabilities } from './port.js';
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

/** The custom argument that carries the key hash into every Event Webhook event (lib/evidence/webhooks.ts). */
export const SENDGRID_KEY_ARG = 'sendproof_key';
/** The custom argument carrying the row label (lib/domain/keys.ts rowLabelOf). */
export const SENDGRID_ROW_ARG = 'sendproof_row';

interface SendGridErrors {
  errors?: Array<{ message?: string; field?: string | null }>;
}

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

  async send(message: OutboundMessage, idempotencyKey: string): Promise<SendResult> {
    const row = rowLabelOf(message.dedupeKey);
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
      // Echoed on every event: the key hash, the row label, and our non-secret labels.
      custom_args: {
        [SENDGRID_KEY_ARG]: idempotencyKey,
        ...(row ? { [SENDGRID_ROW_ARG]: row } : {}),
        ...Object.fromEntries(
          Object.entries(message.tags ?? {}).map(([k, v]) => [
            `sendproof_${k}`.slice(0, 64),
            v.slice(0, 256),
          ]),
        ),
      },
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
    if (status === 429) {
      const retryAfterMs = retryAfterFrom(headers, this.clock.now()) ?? this.rateLimitReset(headers);
      return { kind: 'retryable', reason, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
    }
    const errors = readJson<SendGridErrors>(outcome.body)?.errors ?? [];
    // The field name is safe to keep; messages can quote the address, so they are not kept.
    const field = errors.find(
      (e) => typeof e.field === 'string' && /^[a-z_.[\]0-9]{1,60}$/.test(e.field),
    )?.field;
    return classifyHttpStatus(status, { reason, code: field ? `${reason}:${field}` : reason });
  }

  /** `X-RateLimit-Reset` is the epoch second when the window resets. */
  private rateLimitReset(headers: Record<string, string | string[] | undefined>): number | undefined {
    const raw = headers['x-ratelimit-reset'];
    const seconds = Number(Array.isArray(raw) ? raw[0] : raw);
    if (!Number.isFinite(seconds) || seconds <= 0) return undefined;
    return Math.max(0, seconds * 1000 - this.clock.now());
  }
}
