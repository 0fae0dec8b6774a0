import type { IncomingHttpHeaders } from 'node:http';
import type { ExchangeOutcome } from './HttpExchange.js';
import type { SendResult } from './port.js';

/**
 * The one place that decides what a failed provider call means. Every adapter routes its failures here,
 * and docs/transports.md carries the same table.
 *
 * | What happened                                         | Kind       |
 * |-------------------------------------------------------|------------|
 * | DNS failure, connection refused, connect timeout      | retryable  |
 * | connection dropped before the request was fully sent  | retryable  |
 * | 429 (throttled; Retry-After honoured)                 | retryable  |
 * | 408 (the server gave up waiting for our request)      | retryable  |
 * | other 4xx (invalid destination, validation, auth)     | rejected   |
 * | 5xx after the request was sent                        | ambiguous  |
 * | reset / hang-up / response timeout after sending      | ambiguous  |
 * | 2xx without a usable message id                       | ambiguous  |
 */

/** Network error codes that can only happen before a request reaches the provider. */
export const NEVER_LEFT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EADDRNOTAVAIL',
  'ECONNECTTIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** A failure reported by HttpExchange: before the last byte left it is safe to retry, after it is not. */
export const classifyExchangeFailure = (
  failure: Extract<ExchangeOutcome, { kind: 'failure' }>,
): SendResult => {
  if (failure.stage === 'connect' || NEVER_LEFT_CODES.has(failure.code))
    return { kind: 'retryable', reason: `request_never_left:${failure.code}` };
  if (failure.stage === 'send')
    return { kind: 'retryable', reason: `request_not_fully_sent:${failure.code}` };
  if (failure.code === 'ERESPONSETIMEOUT')
    return { kind: 'ambiguous', reason: 'provider_timeout_after_send' };
  return { kind: 'ambiguous', reason: `connection_lost_after_send:${failure.code}` };
};

const headerValue = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/** Retry-After as delta-seconds or an HTTP-date, in ms from `nowMs`; undefined when absent or unreadable. */
export const parseRetryAfterMs = (
  value: string | string[] | undefined,
  nowMs: number,
): number | undefined => {
  const raw = headerValue(value)?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.ceil(Number(raw) * 1000);
  const at = Date.parse(raw);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
};

export const retryAfterFrom = (headers: IncomingHttpHeaders, nowMs: number): number | undefined =>
  parseRetryAfterMs(headers['retry-after'], nowMs);

/**
 * The default meaning of an HTTP status that is not a success. Adapters handle their provider's special
 * cases (Resend's two 409s, Twilio's 20429) before falling back to this.
 */
export const classifyHttpStatus = (
  status: number,
  detail: { code?: string; reason?: string; retryAfterMs?: number },
): SendResult => {
  const reason = detail.reason ?? `http_${status}`;
  if (status === 429 || status === 408)
    return {
      kind: 'retryable',
      reason,
      ...(detail.retryAfterMs !== undefined ? { retryAfterMs: detail.retryAfterMs } : {}),
    };
  if (status >= 400 && status < 500)
    return { kind: 'rejected', reason, ...(detail.code ? { code: detail.code } : {}) };
  return { kind: 'ambiguous', reason: `provider_error_after_send:${reason}` };
};

/** What an AWS service error means, by its exception name; names not listed fall back to the status. */
export type AwsErrorTable = Readonly<Record<string, SendResult['kind']>>;

interface AwsSdkErrorShape {
  name?: string;
  code?: string;
  message?: string;
  Reason?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string> };
}

/**
 * An error thrown by an AWS SDK v3 client (clients are built with maxAttempts 1, so this is one attempt).
 * With an HTTP status the service answered; without one the failure is at the network level, where only
 * the codes in NEVER_LEFT_CODES prove the request did not reach AWS.
 */
export const classifyAwsError = (error: unknown, table: AwsErrorTable, nowMs: number): SendResult => {
  const e = (error ?? {}) as AwsSdkErrorShape;
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined) {
    const reason = e.Reason ? `${name}:${e.Reason}` : name;
    if (status >= 200 && status < 300) return { kind: 'ambiguous', reason: `unreadable_success:${name}` };
    const retryAfterMs = parseRetryAfterMs(e.$response?.headers?.['retry-after'], nowMs);
    const kind = table[name];
    if (kind === 'retryable')
      return { kind, reason, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
    if (kind === 'rejected') return { kind, reason, code: reason };
    if (kind === 'ambiguous') return { kind, reason: `provider_error_after_send:${reason}` };
    return classifyHttpStatus(status, {
      reason,
      code: name,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }
  if (name === 'AbortError') return { kind: 'ambiguous', reason: 'provider_timeout_after_send' };
  const code = e.code ?? name;
  if (NEVER_LEFT_CODES.has(code)) return { kind: 'retryable', reason: `request_never_left:${code}` };
  return { kind: 'ambiguous', reason: `connection_lost_after_send:${code}` };
};
