import { type Clock, systemClock } from '../domain/clock.js';
import { classifyExchangeFailure, classifyHttpStatus, held, retryAfterFrom } from './classify.js';
import { type ExchangeTimeouts, exchange, lookupGet } from './HttpExchange.js';
import { labelsFor } from './labels.js';
import type {
  CancelResult,
  LookupResult,
  OutboundMessage,
  RejectionCause,
  SendResult,
  Transport,
  TransportCapabilities,
} from './port.js';
import { errorToken, readJson, resolveCredentials } from './wire.js';

export interface ResendTransportOptions {
  /** Default https://api.resend.com; tests point it at a loopback fake. */
  baseUrl?: string;
  from: string;
  /** Resolves the API key (fetched from Secrets Manager by the caller); called once per request. */
  apiKey: () => Promise<string>;
  timeouts?: ExchangeTimeouts;
  clock?: Clock;
}

interface ResendError {
  statusCode?: number;
  name?: string;
  message?: string;
}

/**
 * Resend's documented errors (API reference, "Errors"; resend-node src/interfaces.ts lists the names) and
 * who causes each refusal. The message text is read to tell the two 400/403 `validation_error`s apart and
 * is never recorded: only the error name is.
 */
const RESEND_CAUSES: Readonly<Record<string, RejectionCause>> = {
  invalid_idempotency_key: 'provider',
  missing_api_key: 'provider',
  restricted_api_key: 'provider',
  invalid_api_key: 'provider',
  not_found: 'provider',
  method_not_allowed: 'provider',
  invalid_attachment: 'content',
  invalid_from_address: 'provider',
  invalid_access: 'provider',
  invalid_parameter: 'provider',
  invalid_region: 'provider',
  missing_required_field: 'provider',
  // "We may have found a security issue with the request": the message, never routed elsewhere.
  security_error: 'content',
};

export const classifyResendError = (
  status: number,
  error: ResendError,
  retryAfterMs: number | undefined,
  nowMs: number,
): SendResult => {
  const name = errorToken(error.name, status);
  // Both idempotency 409s say the provider already holds a request under this key (one still running, or
  // one with another payload): something may have been sent under it, so neither is a retry nor a refusal.
  if (status === 409 && (name === 'concurrent_idempotent_requests' || name === 'invalid_idempotent_request'))
    return { kind: 'ambiguous', reason: name };
  // "Another request is already updating the resource": nothing was done under it; ask again later.
  if (status === 409 && name === 'resource_locked')
    return { kind: 'retryable', reason: name, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  // The team's sending quota: every email is refused until it resets, so the transport waits.
  if (name === 'daily_quota_exceeded') return held(name, 'daily_quota', { retryAfterMs, nowMs });
  if (name === 'monthly_quota_exceeded')
    return held(name, 'monthly_quota', { retryAfterMs, fallbackMs: 3_600_000, nowMs });
  const message = typeof error.message === 'string' ? error.message : '';
  let cause = RESEND_CAUSES[name];
  if (name === 'validation_error')
    // 400: a field of the request (`to` is the recipient); 403: testing-mode and domain refusals.
    cause = /`to`|\bto\b field|recipient/i.test(message)
      ? 'recipient'
      : /only send testing emails/i.test(message)
        ? 'account'
        : 'provider';
  return classifyHttpStatus(status, {
    reason: name,
    code: name,
    ...(cause ? { cause } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
};

/**
 * Resend `POST /emails` with an `Idempotency-Key` header, which Resend honours for 24 hours: a retry with
 * the same key and body returns the original email instead of sending a second one.
 */
export class ResendTransport implements Transport {
  readonly name = 'resend';
  readonly channel = 'email' as const;
  readonly capabilities: TransportCapabilities = {
    idempotencyKey: true,
    keyRetentionSeconds: 86_400,
    lookupByKey: false,
    lookupByProviderId: true,
    // `scheduled_at` up to 30 days ahead; `POST /emails/{id}/cancel` while Resend still holds it. The
    // one-minute floor keeps a send that is nearly due in the ledger, where a cancel cannot lose a race.
    cancel: true,
    schedule: { minLeadSeconds: 60, maxLeadSeconds: 30 * 86_400 },
    pushEvidence: false,
  };
  private readonly baseUrl: string;
  private readonly clock: Clock;

  constructor(private readonly options: ResendTransportOptions) {
    this.baseUrl = (options.baseUrl ?? 'https://api.resend.com').replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
  }

  async send(message: OutboundMessage, idempotencyKey: string): Promise<SendResult> {
    const body = {
      from: this.options.from,
      to: [message.to],
      subject: message.subject ?? '',
      text: message.text,
      ...(message.html !== undefined ? { html: message.html } : {}),
      ...(message.attachments?.length
        ? {
            attachments: message.attachments.map((a) => ({
              filename: a.filename,
              content: Buffer.from(a.content).toString('base64'),
              content_type: a.contentType,
            })),
          }
        : {}),
      tags: labelsFor(message.label),
      ...(message.sendAtMs !== undefined ? { scheduled_at: new Date(message.sendAtMs).toISOString() } : {}),
    };
    const apiKey = await resolveCredentials(this.options.apiKey);
    if (!apiKey.ok) return { kind: 'retryable', reason: apiKey.reason };
    const outcome = await exchange({
      method: 'POST',
      url: `${this.baseUrl}/emails`,
      headers: {
        authorization: `Bearer ${apiKey.value}`,
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
      },
      body: JSON.stringify(body),
      ...this.options.timeouts,
    });
    if (outcome.kind === 'failure') return classifyExchangeFailure(outcome);
    const { status, headers } = outcome;
    if (status >= 200 && status < 300) {
      const id = readJson<{ id?: unknown }>(outcome.body)?.id;
      if (typeof id !== 'string' || !id) return { kind: 'ambiguous', reason: 'accepted_without_message_id' };
      return { kind: 'accepted', providerMessageId: id };
    }
    const error = readJson<ResendError>(outcome.body) ?? {};
    return classifyResendError(status, error, retryAfterFrom(headers, this.clock.now()), this.clock.now());
  }

  /**
   * `POST /emails/{id}/cancel`: 2xx means Resend will not send it. A 4xx refusal (the email is no longer
   * scheduled) is too late; anything else (429, 5xx, the network, credentials) is no answer at all.
   */
  async cancelScheduled(providerMessageId: string): Promise<CancelResult> {
    const apiKey = await resolveCredentials(this.options.apiKey);
    if (!apiKey.ok) return { kind: 'unavailable', reason: apiKey.reason };
    const outcome = await exchange({
      method: 'POST',
      url: `${this.baseUrl}/emails/${encodeURIComponent(providerMessageId)}/cancel`,
      headers: { authorization: `Bearer ${apiKey.value}`, 'content-type': 'application/json' },
      body: '{}',
      ...this.options.timeouts,
    });
    if (outcome.kind === 'failure') return { kind: 'unavailable', reason: `network:${outcome.stage}` };
    const { status } = outcome;
    if (status >= 200 && status < 300) return { kind: 'cancelled', detail: `http_${status}` };
    const name = errorToken(readJson<ResendError>(outcome.body)?.name, status);
    if (status >= 400 && status < 500 && ![401, 403, 404, 429].includes(status))
      return { kind: 'too_late', reason: `resend_${name}` };
    return { kind: 'unavailable', reason: `resend_${name}` };
  }

  /** Resend cannot search by idempotency key; with the provider id, `GET /emails/{id}` answers. */
  async lookup(_idempotencyKey: string, providerMessageId?: string): Promise<LookupResult> {
    if (!providerMessageId) return { kind: 'unavailable', reason: 'resend_has_no_lookup_by_key' };
    const apiKey = await resolveCredentials(this.options.apiKey);
    if (!apiKey.ok) return { kind: 'unavailable', reason: apiKey.reason };
    const found = await lookupGet(
      `${this.baseUrl}/emails/${encodeURIComponent(providerMessageId)}`,
      { authorization: `Bearer ${apiKey.value}` },
      this.options.timeouts,
    );
    if (found.kind !== 'ok') return found;
    const id = (found.json as { id?: unknown }).id;
    return typeof id === 'string' && id
      ? { kind: 'accepted', providerMessageId: id }
      : { kind: 'unavailable', reason: 'lookup_unreadable' };
  }
}
