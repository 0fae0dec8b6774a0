import { type Clock, systemClock } from '../domain/clock.js';
import { classifyExchangeFailure, classifyHttpStatus, retryAfterFrom } from './classify.js';
import { type ExchangeTimeouts, exchange, lookupGet } from './HttpExchange.js';
import type {
  CancelResult,
  LookupResult,
  OutboundMessage,
  RejectionCause,
  SendResult,
  Transport,
  TransportCapabilities,
} from './port.js';
import { readJson, resolveCredentials } from './wire.js';

export interface TwilioCredentials {
  accountSid: string;
  authToken: string;
}

export interface TwilioTransportOptions {
  /** Default https://api.twilio.com; tests point it at a loopback fake. */
  baseUrl?: string;
  /** A sender number (E.164) or a Messaging Service SID (`MG…`). */
  from: string;
  /** Resolves the account SID and auth token (fetched from Secrets Manager by the caller). */
  credentials: () => Promise<TwilioCredentials>;
  timeouts?: ExchangeTimeouts;
  clock?: Clock;
  /**
   * The evidence endpoint's Twilio URL. When set, every message asks Twilio for status callbacks there,
   * with the key hash as `?k=` (Twilio signs the whole URL), and the adapter declares push evidence.
   */
  statusCallbackUrl?: string;
}

/** Twilio's ValidityPeriod range, in seconds. */
/** The status callback's query parameter carrying the label (lib/transports/labels.ts). */
export const TWILIO_KEY_PARAM = 'k';

const VALIDITY_MIN_SECONDS = 1;
const VALIDITY_MAX_SECONDS = 36_000;
/** "Too Many Requests": Twilio refused before processing, so a retry cannot duplicate. */
const TWILIO_TOO_MANY_REQUESTS = 20429;
/** "This message cannot be canceled": it is no longer `scheduled`. */
const TWILIO_CANNOT_CANCEL = 30409;
/**
 * Twilio's SendAt window. Its error pages say 300 s in one place and 900 s in another: the larger floor
 * is used, so a request is never refused for being too close.
 */
const SCHEDULE_WINDOW = { minLeadSeconds: 900, maxLeadSeconds: 35 * 86_400 };

interface TwilioError {
  code?: number;
  message?: string;
  status?: number;
}

/**
 * Twilio REST errors for `POST …/Messages.json` (the error pages at twilio.com/docs/api/errors/<code>) and
 * who causes each refusal; an unlisted code falls to the status default (cause `provider`).
 */
const TWILIO_CAUSES: Readonly<Record<number, RejectionCause>> = {
  20003: 'provider', // Authentication Error: our credentials
  20404: 'provider', // The requested resource was not found
  21211: 'recipient', // Invalid 'To' Phone Number
  21408: 'account', // Permission to send an SMS has not been enabled for the region of the 'To' number
  21606: 'provider', // The 'From' number is not a valid message-capable Twilio number for this destination
  21608: 'account', // The 'To' number is not yet verified for this (trial) account
  21610: 'opted_out', // Attempt to send to unsubscribed recipient (the recipient replied STOP)
  21612: 'provider', // The 'To' number is not reachable from the 'From' number via SMS
  21614: 'recipient', // 'To' number is not a valid mobile number
  21617: 'content', // The concatenated message body exceeds the 1600 character limit
};
/** "This 'From' number has exceeded the maximum number of queued messages": refused before queuing; later it may pass. */
const TWILIO_QUEUE_FULL = 21611;

export const classifyTwilioError = (
  status: number,
  error: TwilioError,
  retryAfterMs: number | undefined,
): SendResult => {
  const code = typeof error.code === 'number' ? error.code : undefined;
  if (status === 429 || code === TWILIO_TOO_MANY_REQUESTS)
    return {
      kind: 'retryable',
      reason: `twilio_${code ?? TWILIO_TOO_MANY_REQUESTS}`,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  if (code === TWILIO_QUEUE_FULL)
    return {
      kind: 'retryable',
      reason: `twilio_${code}`,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  const name = code !== undefined ? `twilio_${code}` : `http_${status}`;
  const cause = code !== undefined ? TWILIO_CAUSES[code] : undefined;
  return classifyHttpStatus(status, { reason: name, code: name, ...(cause ? { cause } : {}) });
};

/**
 * Twilio Programmable Messaging `POST /2010-04-01/Accounts/{Sid}/Messages.json`. Twilio has no
 * idempotency key: an answer lost after the request left is ambiguous, and only the SID (if we ever got
 * one) can be looked up.
 */
export class TwilioTransport implements Transport {
  readonly name = 'twilio';
  readonly channel = 'sms' as const;
  readonly capabilities: TransportCapabilities;
  private readonly baseUrl: string;
  private readonly clock: Clock;

  constructor(private readonly options: TwilioTransportOptions) {
    this.baseUrl = (options.baseUrl ?? 'https://api.twilio.com').replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
    // Scheduling (SendAt) and its cancel (Status=canceled) exist only with a Messaging Service sender.
    const service = options.from.startsWith('MG');
    this.capabilities = {
      idempotencyKey: false,
      keyRetentionSeconds: 0,
      lookupByKey: false,
      lookupByProviderId: true,
      cancel: service,
      ...(service ? { schedule: SCHEDULE_WINDOW } : {}),
      pushEvidence: options.statusCallbackUrl !== undefined,
    };
  }

  private async authorised(): Promise<{ accountSid: string; authorization: string }> {
    const { accountSid, authToken } = await this.options.credentials();
    return {
      accountSid,
      authorization: `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`,
    };
  }

  async send(message: OutboundMessage, _idempotencyKey: string): Promise<SendResult> {
    const now = this.clock.now();
    const form = new URLSearchParams({ To: message.to, Body: message.text });
    if (this.options.statusCallbackUrl) {
      const callback = new URL(this.options.statusCallbackUrl);
      // The label (lib/transports/labels.ts): the callback names its row, and Twilio's logs show nothing readable.
      callback.searchParams.set(TWILIO_KEY_PARAM, message.label);
      form.set('StatusCallback', callback.toString());
    }
    if (this.options.from.startsWith('MG')) form.set('MessagingServiceSid', this.options.from);
    else form.set('From', this.options.from);
    if (message.sendAtMs !== undefined) {
      form.set('ScheduleType', 'fixed');
      form.set('SendAt', new Date(message.sendAtMs).toISOString().replace(/\.\d{3}Z$/, 'Z'));
    } else if (message.expiresAtMs !== undefined) {
      const remaining = Math.floor((message.expiresAtMs - now) / 1000);
      if (remaining <= 0)
        return { kind: 'rejected', reason: 'message_expired_before_send', code: 'expired', cause: 'content' };
      form.set(
        'ValidityPeriod',
        String(Math.min(VALIDITY_MAX_SECONDS, Math.max(VALIDITY_MIN_SECONDS, remaining))),
      );
    }
    const auth = await resolveCredentials(() => this.authorised());
    if (!auth.ok) return { kind: 'retryable', reason: auth.reason };
    const { accountSid, authorization } = auth.value;
    const outcome = await exchange({
      method: 'POST',
      url: `${this.baseUrl}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`,
      headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      ...this.options.timeouts,
    });
    if (outcome.kind === 'failure') return classifyExchangeFailure(outcome);
    const { status } = outcome;
    if (status >= 200 && status < 300) {
      const sid = readJson<{ sid?: unknown }>(outcome.body)?.sid;
      if (typeof sid !== 'string' || !sid)
        return { kind: 'ambiguous', reason: 'accepted_without_message_id' };
      return { kind: 'accepted', providerMessageId: sid };
    }
    const error = readJson<TwilioError>(outcome.body) ?? {};
    return classifyTwilioError(status, error, retryAfterFrom(outcome.headers, now));
  }

  /** `POST …/Messages/{Sid}.json` with `Status=canceled`; 30409 means it is no longer scheduled. */
  async cancelScheduled(providerMessageId: string): Promise<CancelResult> {
    const auth = await resolveCredentials(() => this.authorised());
    if (!auth.ok) return { kind: 'unavailable', reason: auth.reason };
    const { accountSid, authorization } = auth.value;
    const outcome = await exchange({
      method: 'POST',
      url: `${this.baseUrl}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages/${encodeURIComponent(providerMessageId)}.json`,
      headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ Status: 'canceled' }).toString(),
      ...this.options.timeouts,
    });
    if (outcome.kind === 'failure') return { kind: 'unavailable', reason: `network:${outcome.stage}` };
    const { status } = outcome;
    const answer = readJson<{ status?: unknown; code?: unknown }>(outcome.body) ?? {};
    if (status >= 200 && status < 300 && answer.status === 'canceled') return { kind: 'cancelled' };
    if (answer.code === TWILIO_CANNOT_CANCEL)
      return { kind: 'too_late', reason: `twilio_${TWILIO_CANNOT_CANCEL}` };
    return {
      kind: 'unavailable',
      reason: typeof answer.code === 'number' ? `twilio_${answer.code}` : `http_${status}`,
    };
  }

  /** `GET …/Messages/{Sid}.json`. Without a SID there is nothing to ask: Twilio has no key to search by. */
  async lookup(_idempotencyKey: string, providerMessageId?: string): Promise<LookupResult> {
    if (!providerMessageId) return { kind: 'unavailable', reason: 'twilio_has_no_lookup_by_key' };
    const auth = await resolveCredentials(() => this.authorised());
    if (!auth.ok) return { kind: 'unavailable', reason: auth.reason };
    const { accountSid, authorization } = auth.value;
    const answer = await lookupGet(
      `${this.baseUrl}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages/${encodeURIComponent(providerMessageId)}.json`,
      { authorization },
      this.options.timeouts,
    );
    if (answer.kind !== 'ok') return answer;
    const found = answer.json as { sid?: unknown; status?: unknown; error_code?: unknown };
    if (typeof found?.sid !== 'string') return { kind: 'unavailable', reason: 'lookup_unreadable' };
    // `failed`: Twilio took the request but could not send it (e.g. queue overflow, unreachable carrier).
    if (found.status === 'failed')
      return {
        kind: 'rejected',
        // Twilio error codes are numbers; anything else is not recorded.
        reason: `twilio_status_failed:${typeof found.error_code === 'number' ? found.error_code : 'unknown'}`,
      };
    return { kind: 'accepted', providerMessageId: found.sid };
  }
}
