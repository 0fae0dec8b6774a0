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
 * | (any code, EHOSTUNREACH… included, before a byte left)|            |
 * | connection dropped before the request was fully sent  | retryable  |
 * | any network error after the request was written,      | ambiguous  |
 * | EHOSTUNREACH / ENETUNREACH / ECONNREFUSED included    |            |
 * | 429 (throttled; Retry-After honoured)                 | retryable  |
 * | 408 (the server gave up waiting for our request)      | retryable  |
 * | other 4xx (invalid destination, validation, auth)     | rejected   |
 * | 5xx after the request was sent                        | ambiguous  |
 * | reset / hang-up / response timeout after sending      | ambiguous  |
 * | 2xx without a usable message id                       | ambiguous  |
 */

/**
 * Codes that can only arise before a connection exists (name resolution, TLS verification during the
 * handshake, our own connect timeout): whoever reports them, no byte of the request was written.
 */
const PRE_CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNECTTIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Network error codes that mean "never left" when connect() (or the lookup before it) reports them. The
 * route codes are not proof on their own: the kernel reports EHOSTUNREACH / ENETUNREACH on an established
 * connection too (an ICMP error recorded while it retransmits our request), and by then the provider may
 * have read and run the whole request. So they count only before the request was written.
 */
export const NEVER_LEFT_CODES: ReadonlySet<string> = new Set([
  ...PRE_CONNECTION_CODES,
  'ECONNREFUSED',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EADDRNOTAVAIL',
]);

/** The system calls whose failures happen before a request's first byte is written. */
const PRE_WRITE_SYSCALLS: ReadonlySet<string> = new Set(['connect', 'getaddrinfo']);

/**
 * A failure reported by HttpExchange, which tracks how far the request got (socket connected, last byte
 * handed to the kernel): before that it is safe to retry, after it is not, whatever the error code.
 */
export const classifyExchangeFailure = (
  failure: Extract<ExchangeOutcome, { kind: 'failure' }>,
): SendResult => {
  if (failure.stage === 'connect') return { kind: 'retryable', reason: `request_never_left:${failure.code}` };
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
  /** Node's system-call name on network errors: `connect`, `getaddrinfo`, `read`, `write`. */
  syscall?: string;
  message?: string;
  Reason?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string> };
}

/**
 * An error thrown by an AWS SDK v3 client (clients are built with maxAttempts 1, so this is one attempt).
 * With an HTTP status the service answered; without one the failure is at the network level, where only
 * a code in NEVER_LEFT_CODES raised before the request was written (by connect() or the DNS lookup, as the
 * error's `syscall` says; or a TLS verification failure) proves the request did not reach AWS. The same
 * code raised on a read or a write of the established connection is ambiguous.
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
  const beforeWrite =
    PRE_CONNECTION_CODES.has(code) || (e.syscall !== undefined && PRE_WRITE_SYSCALLS.has(e.syscall));
  if (NEVER_LEFT_CODES.has(code) && beforeWrite)
    return { kind: 'retryable', reason: `request_never_left:${code}` };
  return { kind: 'ambiguous', reason: `connection_lost_after_send:${code}` };
};
