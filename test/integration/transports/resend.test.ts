import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResendTransport } from '../../../lib/transports/ResendTransport.js';
import { closedPort, emailMessage, keyFor } from '../../support/fakes/outbound.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';

/** Resend's documented error body: `{ statusCode, name, message }`. */
const resendError = (status: number, name: string, headers: Record<string, string> = {}) => ({
  reply: status,
  headers,
  body: { statusCode: status, name, message: `${name} (fake)` },
});

describe('ResendTransport against a Resend API fake', () => {
  let fake: ScriptedHttpServer;

  beforeAll(async () => {
    fake = await ScriptedHttpServer.start((req) =>
      req.method === 'POST' && req.path === '/emails'
        ? { reply: 200, body: { id: '49a3999c-0ce1-4ea6-ab68-afcd6dc2e794' } }
        : { reply: 404, body: { statusCode: 404, name: 'not_found', message: 'Email not found' } },
    );
  });

  afterAll(async () => {
    await fake.stop();
  });

  const transport = (baseUrl = fake.url) =>
    new ResendTransport({
      baseUrl,
      from: 'Receipts <receipts@sendproof.test>',
      apiKey: async () => 're_test_key',
      timeouts: { responseTimeoutMs: 300 },
    });

  it('an accepted send returns the Resend id and sends the key, bearer token, tags and attachment', async () => {
    // Prepare
    const message = emailMessage({
      attachments: [
        { filename: 'r.pdf', contentType: 'application/pdf', content: new Uint8Array([1, 2, 3]) },
      ],
    });
    const key = keyFor(message.dedupeKey);

    // Act
    const result = await transport().send(message, key);

    // Assess
    expect(result).toEqual({ kind: 'accepted', providerMessageId: '49a3999c-0ce1-4ea6-ab68-afcd6dc2e794' });
    const req = fake.requests.at(-1)!;
    expect(req.headers['idempotency-key']).toBe(key);
    expect(req.headers.authorization).toBe('Bearer re_test_key');
    const body = JSON.parse(req.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      to: ['ada@example.com'],
      subject: 'Your receipt',
      text: 'Thanks for your order.',
    });
    // The sealed label only (lib/transports/labels.ts): no tenant, purpose or readable key.
    expect(body.tags).toEqual([{ name: 'sendproof-key', value: message.label }]);
    expect(body.attachments).toEqual([
      { filename: 'r.pdf', content: 'AQID', content_type: 'application/pdf' },
    ]);
  });

  it('409 concurrent_idempotent_requests is ambiguous: a request under the key is still running and may send', async () => {
    // Prepare
    fake.enqueue(resendError(409, 'concurrent_idempotent_requests'));

    // Act
    const result = await transport().send(emailMessage(), keyFor('c'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'concurrent_idempotent_requests' });
  });

  it('409 invalid_idempotent_request is ambiguous: the provider holds the key from an earlier request', async () => {
    // Prepare
    fake.enqueue(resendError(409, 'invalid_idempotent_request'));

    // Act
    const result = await transport().send(emailMessage(), keyFor('m'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'invalid_idempotent_request' });
  });

  it('429 is retryable and honours retry-after', async () => {
    // Prepare
    fake.enqueue(resendError(429, 'rate_limit_exceeded', { 'retry-after': '4' }));

    // Act
    const result = await transport().send(emailMessage(), keyFor('t'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'rate_limit_exceeded', retryAfterMs: 4_000 });
  });

  it('422 validation errors are permanent', async () => {
    // Prepare
    fake.enqueue(resendError(422, 'validation_error'));

    // Act
    const result = await transport().send(emailMessage({ to: 'not-an-address' }), keyFor('v'));

    // Assess
    expect(result).toMatchObject({ kind: 'rejected', reason: 'validation_error', code: 'validation_error' });
  });

  it('409 resource_locked is a retry later, not a refusal', async () => {
    // Prepare: another request is updating the resource; nothing was done under this one
    fake.enqueue(resendError(409, 'resource_locked'));

    // Act
    const result = await transport().send(emailMessage(), keyFor('l'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'resource_locked' });
  });

  it('a 5xx is ambiguous', async () => {
    // Prepare
    fake.enqueue(resendError(500, 'internal_server_error'));

    // Act
    const result = await transport().send(emailMessage(), keyFor('5'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'provider_error_after_send:internal_server_error' });
  });

  it('a socket destroyed after the request was read is ambiguous', async () => {
    // Prepare
    fake.enqueue({ destroyAfterRequest: true });

    // Act
    const result = await transport().send(emailMessage(), keyFor('d'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:ECONNRESET' });
  });

  it('no answer within the response timeout is ambiguous', async () => {
    // Prepare
    fake.enqueue({ hang: true });

    // Act
    const result = await transport().send(emailMessage(), keyFor('h'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'provider_timeout_after_send' });
  });

  it('connection refused is retryable', async () => {
    // Prepare
    const port = await closedPort();

    // Act
    const result = await transport(`http://127.0.0.1:${port}`).send(emailMessage(), keyFor('r'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' });
  });

  it('looks an email up by provider id, and reports not_found for an unknown id', async () => {
    // Prepare
    fake.enqueue({ reply: 200, body: { object: 'email', id: 'e-1', last_event: 'delivered' } });

    // Act
    const found = await transport().lookup(keyFor('l'), 'e-1');
    const missing = await transport().lookup(keyFor('l'), 'e-2');
    const noId = await transport().lookup(keyFor('l'));

    // Assess
    expect(found).toEqual({ kind: 'accepted', providerMessageId: 'e-1' });
    expect(fake.requests.at(-1)?.path).toBe('/emails/e-2');
    expect(missing).toEqual({ kind: 'not_found' });
    expect(noId.kind).toBe('unavailable');
  });
});
