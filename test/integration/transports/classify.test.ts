import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AwsErrorTable,
  classifyAwsError,
  classifyExchangeFailure,
  classifyHttpStatus,
  parseRetryAfterMs,
} from '../../../lib/transports/classify.js';
import { exchange } from '../../../lib/transports/HttpExchange.js';
import { closedPort } from '../../support/fakes/outbound.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';

const NOW = Date.parse('2026-11-30T12:00:00Z');

describe('classification rules (pure)', () => {
  it('a failure before the socket connected is retryable: the request never left', () => {
    // Act
    const result = classifyExchangeFailure({
      kind: 'failure',
      stage: 'connect',
      code: 'ECONNREFUSED',
    });

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' });
  });

  it('a "never left" code after the request was written is ambiguous: the stage decides, not the code', () => {
    // Act
    const result = classifyExchangeFailure({
      kind: 'failure',
      stage: 'response',
      code: 'EHOSTUNREACH',
    });

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:EHOSTUNREACH' });
  });

  it('a failure before the last byte was written is retryable: the server never had a whole request', () => {
    // Act
    const result = classifyExchangeFailure({ kind: 'failure', stage: 'send', code: 'EPIPE' });

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_not_fully_sent:EPIPE' });
  });

  it('a reset or a timeout after the request was written is ambiguous', () => {
    // Act
    const reset = classifyExchangeFailure({
      kind: 'failure',
      stage: 'response',
      code: 'ECONNRESET',
    });
    const timeout = classifyExchangeFailure({
      kind: 'failure',
      stage: 'response',
      code: 'ERESPONSETIMEOUT',
    });

    // Assess
    expect(reset).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:ECONNRESET' });
    expect(timeout).toEqual({ kind: 'ambiguous', reason: 'provider_timeout_after_send' });
  });

  it('429 is retryable and carries Retry-After; other 4xx are permanent; 5xx is ambiguous', () => {
    // Act
    const throttled = classifyHttpStatus(429, { retryAfterMs: 2_000 });
    const invalid = classifyHttpStatus(422, {
      reason: 'invalid_destination',
      code: 'invalid_destination',
      cause: 'recipient',
    });
    const broken = classifyHttpStatus(503, {});

    // Assess
    expect(throttled).toEqual({ kind: 'retryable', reason: 'http_429', retryAfterMs: 2_000 });
    expect(invalid).toEqual({
      kind: 'rejected',
      reason: 'invalid_destination',
      code: 'invalid_destination',
      cause: 'recipient',
    });
    expect(broken).toEqual({ kind: 'ambiguous', reason: 'provider_error_after_send:http_503' });
  });

  it('reads Retry-After as seconds or as an HTTP date, and ignores garbage', () => {
    // Act / Assess
    expect(parseRetryAfterMs('7', NOW)).toBe(7_000);
    expect(parseRetryAfterMs('1.5', NOW)).toBe(1_500);
    expect(parseRetryAfterMs(new Date(NOW + 30_000).toUTCString(), NOW)).toBe(30_000);
    expect(parseRetryAfterMs(new Date(NOW - 30_000).toUTCString(), NOW)).toBe(0);
    expect(parseRetryAfterMs('soon', NOW)).toBeUndefined();
    expect(parseRetryAfterMs(undefined, NOW)).toBeUndefined();
  });

  it('an AWS exception is classified by name first, then by status', () => {
    // Prepare
    const table: AwsErrorTable = {
      TooManyRequestsException: { kind: 'retryable' },
      MessageRejected: { kind: 'rejected', cause: 'content' },
    };
    const aws = (name: string, status?: number) =>
      Object.assign(new Error(name), {
        name,
        $metadata: status === undefined ? {} : { httpStatusCode: status },
      });

    // Act / Assess
    expect(classifyAwsError(aws('TooManyRequestsException', 429), table, NOW).kind).toBe('retryable');
    expect(classifyAwsError(aws('MessageRejected', 400), table, NOW)).toEqual({
      kind: 'rejected',
      reason: 'MessageRejected',
      code: 'MessageRejected',
      cause: 'content',
    });
    expect(classifyAwsError(aws('SomethingNew', 400), table, NOW).kind).toBe('rejected');
    expect(classifyAwsError(aws('InternalFailure', 500), table, NOW).kind).toBe('ambiguous');
    expect(classifyAwsError(aws('SyntaxError', 200), table, NOW).kind).toBe('ambiguous');
    expect(classifyAwsError(aws('AbortError'), table, NOW)).toEqual({
      kind: 'ambiguous',
      reason: 'provider_timeout_after_send',
    });
    expect(
      classifyAwsError(
        Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', syscall: 'connect' }),
        table,
        NOW,
      ).kind,
    ).toBe('retryable');
    expect(
      classifyAwsError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), table, NOW).kind,
    ).toBe('ambiguous');
  });
});

describe('HttpExchange reports how far a request got (real sockets on loopback)', () => {
  let fake: ScriptedHttpServer;
  let silent: Server;
  let silentUrl: string;

  beforeAll(async () => {
    fake = await ScriptedHttpServer.start();
    // Accepts connections and never reads or answers: a request that is written but never answered.
    silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    silentUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });

  afterAll(async () => {
    await fake.stop();
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('connection refused fails at the connect stage', async () => {
    // Prepare
    const port = await closedPort();

    // Act
    const outcome = await exchange({ method: 'POST', url: `http://127.0.0.1:${port}/x`, body: '{}' });

    // Assess
    expect(outcome).toMatchObject({ kind: 'failure', stage: 'connect', code: 'ECONNREFUSED' });
  });

  it('a socket destroyed after the server read the request fails at the response stage', async () => {
    // Prepare
    fake.enqueue({ destroyAfterRequest: true });

    // Act
    const outcome = await exchange({ method: 'POST', url: `${fake.url}/x`, body: '{"a":1}' });

    // Assess
    expect(outcome).toMatchObject({ kind: 'failure', stage: 'response', code: 'ECONNRESET' });
    expect(fake.requests.at(-1)?.body).toBe('{"a":1}');
  });

  it('no answer within the response timeout fails at the response stage', async () => {
    // Act
    const outcome = await exchange({
      method: 'POST',
      url: `${silentUrl}/x`,
      body: '{}',
      responseTimeoutMs: 150,
    });

    // Assess
    expect(outcome).toMatchObject({ kind: 'failure', stage: 'response', code: 'ERESPONSETIMEOUT' });
  });

  it('an answer comes back with status, headers and body', async () => {
    // Prepare
    fake.enqueue({ reply: 429, headers: { 'retry-after': '3' }, body: { error: 'slow down' } });

    // Act
    const outcome = await exchange({ method: 'GET', url: `${fake.url}/x` });

    // Assess
    expect(outcome).toMatchObject({ kind: 'response', status: 429, body: '{"error":"slow down"}' });
    expect(outcome.kind === 'response' && outcome.headers['retry-after']).toBe('3');
  });
});
