import type { IncomingHttpHeaders } from 'node:http';
import type { ExchangeOutcome } from './HttpExchange.js';
import type { HoldReason, RejectionCause, SendResult, TransportHold } from './port.js';

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
 * | a quota or pause of the whole account (per provider)  | retryable, with `hold` |
 * | other 4xx (invalid destination, validation, auth)     | rejected, with `cause` |
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

/**
 * The reason prefixes of a `retryable` answer whose request provably never reached the provider (see
 * `classifyExchangeFailure` and `classifyAwsError`): the only network failures a failover may follow.
 */
export const NEVER_LEFT_REASONS = ['request_never_left', 'request_not_fully_sent'] as const;

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

/** How long a held transport waits before it asks again when the provider names no time (SES: "wait for an interval of up to 10 minutes, and then retry"). */
export const HOLD_RETRY_MS = 10 * 60_000;

export interface HttpErrorDetail {
  code?: string;
  reason?: string;
  retryAfterMs?: number;
  /** Who caused a 4xx refusal; `provider` when the adapter cannot tell (the request, not the recipient, is what it names). */
  cause?: RejectionCause;
}

const retryable = (reason: string, retryAfterMs?: number, hold?: TransportHold): SendResult => ({
  kind: 'retryable',
  reason,
  ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  ...(hold ? { hold } : {}),
});

/**
 * An account-level answer: retry later, and say that the whole transport is held, not this row. `until` is
 * set only when the provider named the time (a Retry-After); otherwise the row asks again after
 * `fallbackMs` (default HOLD_RETRY_MS).
 */
export const held = (
  reason: string,
  hold: HoldReason,
  when: { retryAfterMs?: number | undefined; fallbackMs?: number | undefined; nowMs: number },
): SendResult => {
  const named = when.retryAfterMs;
  return retryable(reason, named ?? when.fallbackMs ?? HOLD_RETRY_MS, {
    reason: hold,
    ...(named !== undefined ? { until: when.nowMs + named } : {}),
  });
};

/**
 * The default meaning of an HTTP status that is not a success. Adapters handle their provider's special
 * cases (Resend's two 409s and `resource_locked`, Twilio's 20429, the quotas) before falling back to this.
 */
export const classifyHttpStatus = (status: number, detail: HttpErrorDetail): SendResult => {
  const reason = detail.reason ?? `http_${status}`;
  if (status === 429 || status === 408) return retryable(reason, detail.retryAfterMs);
  if (status >= 400 && status < 500)
    return {
      kind: 'rejected',
      reason,
      ...(detail.code ? { code: detail.code } : {}),
      cause: detail.cause ?? 'provider',
    };
  return { kind: 'ambiguous', reason: `provider_error_after_send:${reason}` };
};

/** What an AWS service error says, as far as classification needs it (nothing of it is recorded but the name and Reason). */
export interface AwsErrorDetail {
  name: string;
  status: number;
  /** The service's message text: read to tell documented variants apart, never recorded (it can quote an address). */
  message: string;
  /** The modeled `Reason` (End User Messaging SMS), when the exception has one. */
  reason?: string;
  /** Names of the fields a ValidationException lists. */
  fields: readonly string[];
}

/** What one AWS exception means for a claim. */
export type AwsErrorRule =
  | { kind: 'retryable'; hold?: HoldReason; holdRetryMs?: number }
  | { kind: 'rejected'; cause: RejectionCause }
  | { kind: 'ambiguous' };

/** Exception name → its rule, or a function of the documented detail (message, Reason, fields) giving one. */
export type AwsErrorTable = Readonly<
  Record<string, AwsErrorRule | ((detail: AwsErrorDetail) => AwsErrorRule)>
>;

/**
 * The errors every AWS query/JSON API can answer (the SES v2 API reference, "Common Errors"), read after
 * the service's own table. A new signature is computed on every attempt, so RequestExpired is retryable.
 */
export const AWS_COMMON_ERRORS: AwsErrorTable = {
  AccessDeniedException: { kind: 'rejected', cause: 'provider' },
  IncompleteSignature: { kind: 'rejected', cause: 'provider' },
  InternalFailure: { kind: 'ambiguous' },
  InvalidAction: { kind: 'rejected', cause: 'provider' },
  InvalidClientTokenId: { kind: 'rejected', cause: 'provider' },
  NotAuthorized: { kind: 'rejected', cause: 'provider' },
  OptInRequired: { kind: 'rejected', cause: 'account' },
  RequestExpired: { kind: 'retryable' },
  ServiceUnavailable: { kind: 'ambiguous' },
  ThrottlingException: { kind: 'retryable' },
  ValidationError: { kind: 'rejected', cause: 'provider' },
};

/**
 * The SDK's own retry classification (`isThrottlingError` / `isTransientError` from `@smithy/core/retry`),
 * consulted for an exception no table names: one the SDK's retry logic would retry is never `rejected`.
 * Loaded by the AWS adapters on the error path only (the SDK client has loaded it by then).
 */
export interface SdkRetrySignals {
  isThrottlingError(error: never): boolean;
  isTransientError(error: never): boolean;
}

let signals: Promise<SdkRetrySignals> | undefined;
export const sdkRetrySignals = (): Promise<SdkRetrySignals> => {
  signals ??= import('@smithy/core/retry').then((m) => ({
    isThrottlingError: m.isThrottlingError as SdkRetrySignals['isThrottlingError'],
    isTransientError: m.isTransientError as SdkRetrySignals['isTransientError'],
  }));
  return signals;
};

interface AwsSdkErrorShape {
  name?: string;
  code?: string;
  /** Node's system-call name on network errors: `connect`, `getaddrinfo`, `read`, `write`. */
  syscall?: string;
  message?: string;
  Message?: string;
  Reason?: string;
  Fields?: Array<{ Name?: string }>;
  /** The model's retryable trait, set by the SDK on exceptions the service marks retryable. */
  $retryable?: { throttling?: boolean };
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string> };
}

/**
 * An error thrown by an AWS SDK v3 client (clients are built with maxAttempts 1, so this is one attempt).
 * With an HTTP status the service answered: its exception name is looked up in the service's table, then
 * in AWS_COMMON_ERRORS, then asked of the SDK's retry classification; only then does the status decide.
 * Without one the failure is at the network level, where only a code in NEVER_LEFT_CODES raised before
 * the request was written (by connect() or the DNS lookup, as the error's `syscall` says; or a TLS
 * verification failure) proves the request did not reach AWS. The same code raised on a read or a write
 * of the established connection is ambiguous.
 */
export const classifyAwsError = (
  error: unknown,
  table: AwsErrorTable,
  nowMs: number,
  sdk?: SdkRetrySignals,
): SendResult => {
  const e = (error ?? {}) as AwsSdkErrorShape;
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined) {
    const reason = e.Reason ? `${name}:${e.Reason}` : name;
    if (status >= 200 && status < 300) return { kind: 'ambiguous', reason: `unreadable_success:${name}` };
    const retryAfterMs = parseRetryAfterMs(e.$response?.headers?.['retry-after'], nowMs);
    const entry = table[name] ?? AWS_COMMON_ERRORS[name];
    const detail: AwsErrorDetail = {
      name,
      status,
      message: e.message ?? e.Message ?? '',
      ...(e.Reason ? { reason: e.Reason } : {}),
      fields: (e.Fields ?? []).flatMap((f) => (typeof f?.Name === 'string' ? [f.Name] : [])),
    };
    const rule = typeof entry === 'function' ? entry(detail) : entry;
    if (rule?.kind === 'retryable') {
      if (rule.hold) return held(reason, rule.hold, { retryAfterMs, fallbackMs: rule.holdRetryMs, nowMs });
      return retryable(reason, retryAfterMs);
    }
    if (rule?.kind === 'rejected') {
      // A refusal is a 4xx: the same name with a 5xx is a server failure that may have run the request;
      // with 429/408, or an exception the service's model marks retryable (`$retryable`), it was not run.
      if (status >= 500) return { kind: 'ambiguous', reason: `provider_error_after_send:${reason}` };
      if (status === 429 || status === 408 || e.$retryable !== undefined)
        return retryable(reason, retryAfterMs);
      return { kind: 'rejected', reason, code: reason, cause: rule.cause };
    }
    if (rule?.kind === 'ambiguous')
      return { kind: 'ambiguous', reason: `provider_error_after_send:${reason}` };
    if (sdk?.isThrottlingError(e as never)) return retryable(reason, retryAfterMs);
    // Transient by the SDK's rules: a 5xx may have run (ambiguous); a 4xx timeout did not (retryable).
    if (sdk?.isTransientError(e as never))
      return status >= 500
        ? { kind: 'ambiguous', reason: `provider_error_after_send:${reason}` }
        : retryable(reason, retryAfterMs);
    return classifyHttpStatus(status, {
      reason,
      code: name,
      cause: 'provider',
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
