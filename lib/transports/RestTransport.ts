import { type Clock, systemClock } from '../domain/clock.js';
import type { Channel } from '../domain/purposes.js';
import { classifyExchangeFailure, classifyHttpStatus, retryAfterFrom } from './classify.js';
import { type ExchangeTimeouts, exchange, type LookupGet, lookupGet } from './HttpExchange.js';
import { KEY_TAG } from './labels.js';
import type { LookupResult, OutboundMessage, SendResult, Transport, TransportCapabilities } from './port.js';
import { errorToken, readJson, resolveCredentials } from './wire.js';

export interface RestTransportOptions {
  baseUrl: string;
  channel: Channel;
  /**
   * How long the provider remembers an Idempotency-Key (config: SENDPROOF_REST_KEY_RETENTION_SECONDS);
   * the replay window is measured against it. Default 86400 (the simulator's default).
   */
  keyRetentionSeconds?: number;
  /** Optional bearer token (fetched from Secrets Manager by the caller); an empty string sends none. */
  apiKey?: () => Promise<string>;
  timeouts?: ExchangeTimeouts;
  clock?: Clock;
}

interface MessageView {
  id?: unknown;
  idempotencyKey?: unknown;
  status?: unknown;
}

/**
 * The generic REST convention (the one the provider simulator speaks):
 * `POST {base}/v1/{email|sms}/send` with `Idempotency-Key`, `GET {base}/v1/messages?idempotency_key=K`,
 * and the event feed `GET {base}/v1/events?after=<cursor>`, whose events echo the send's `tags` (the row
 * label `sendproof-row` among them, so evidence names its ledger row).
 */
export class RestTransport implements Transport {
  readonly name = 'rest';
  readonly channel: Channel;
  readonly capabilities: TransportCapabilities;
  private readonly baseUrl: string;
  private readonly clock: Clock;

  constructor(private readonly options: RestTransportOptions) {
    this.channel = options.channel;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
    this.capabilities = {
      idempotencyKey: true,
      keyRetentionSeconds: options.keyRetentionSeconds ?? 86_400,
      lookupByKey: true,
      lookupByProviderId: true,
      cancel: false,
      pushEvidence: false,
    };
  }

  private async headers(): Promise<Record<string, string>> {
    const token = this.options.apiKey ? await this.options.apiKey() : '';
    return token ? { authorization: `Bearer ${token}` } : {};
  }

  async send(message: OutboundMessage, idempotencyKey: string): Promise<SendResult> {
    // The convention's events echo the send's tags: the label (lib/transports/labels.ts), nothing readable.
    const tags = { tags: { [KEY_TAG]: message.label } };
    const body =
      this.channel === 'email'
        ? {
            to: message.to,
            subject: message.subject ?? '',
            text: message.text,
            ...(message.html !== undefined ? { html: message.html } : {}),
            ...(message.attachments?.length
              ? {
                  attachments: message.attachments.map((a) => ({
                    filename: a.filename,
                    contentType: a.contentType,
                    contentBase64: Buffer.from(a.content).toString('base64'),
                  })),
                }
              : {}),
            ...tags,
          }
        : { to: message.to, text: message.text, ...tags };
    const auth = await resolveCredentials(() => this.headers());
    if (!auth.ok) return { kind: 'retryable', reason: auth.reason };
    const outcome = await exchange({
      method: 'POST',
      url: `${this.baseUrl}/v1/${this.channel}/send`,
      headers: {
        ...auth.value,
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
      },
      body: JSON.stringify(body),
      ...this.options.timeouts,
    });
    if (outcome.kind === 'failure') return classifyExchangeFailure(outcome);
    const { status, headers } = outcome;
    if (status >= 200 && status < 300) {
      const id = readJson<MessageView>(outcome.body)?.id;
      if (typeof id !== 'string' || !id) return { kind: 'ambiguous', reason: 'accepted_without_message_id' };
      const replayed = String(headers['idempotent-replayed']).toLowerCase() === 'true';
      return { kind: 'accepted', providerMessageId: id, ...(replayed ? { replayed } : {}) };
    }
    const name = errorToken(readJson<{ error?: unknown }>(outcome.body)?.error, status);
    const retryAfterMs = retryAfterFrom(headers, this.clock.now());
    // A 409 says the provider already holds a request under this key (still in flight, or with another
    // payload): something may have been sent under it, so it is neither a retry nor a refusal.
    if (status === 409) return { kind: 'ambiguous', reason: name };
    return classifyHttpStatus(status, {
      reason: name,
      code: name,
      // The convention's one named refusal is the destination's; any other 4xx is the request's.
      cause: name === 'invalid_destination' ? 'recipient' : 'provider',
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }

  /** By key first (the point of the convention); by provider id when the key finds nothing and we have one. */
  async lookup(idempotencyKey: string, providerMessageId?: string): Promise<LookupResult> {
    const byKey = await this.get(`/v1/messages?idempotency_key=${encodeURIComponent(idempotencyKey)}`);
    if (byKey.kind !== 'ok') return byKey;
    const data = (byKey.json as { data?: MessageView[] }).data;
    if (!Array.isArray(data)) return { kind: 'unavailable', reason: 'lookup_unreadable' };
    const found = data.find((m) => typeof m.id === 'string');
    if (found) return { kind: 'accepted', providerMessageId: found.id as string };
    if (!providerMessageId) return { kind: 'not_found' };
    const byId = await this.get(`/v1/messages/${encodeURIComponent(providerMessageId)}`);
    if (byId.kind !== 'ok') return byId;
    const id = (byId.json as MessageView).id;
    return typeof id === 'string' ? { kind: 'accepted', providerMessageId: id } : { kind: 'not_found' };
  }

  private async get(path: string): Promise<LookupGet> {
    const auth = await resolveCredentials(() => this.headers());
    if (!auth.ok) return { kind: 'unavailable', reason: auth.reason };
    return lookupGet(`${this.baseUrl}${path}`, auth.value, this.options.timeouts);
  }
}
