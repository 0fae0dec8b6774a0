import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SendGridTransport } from '../../../lib/transports/SendGridTransport.js';
import { closedPort, emailMessage, keyFor } from '../../support/fakes/outbound.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';

/** SendGrid's documented error body: `{ errors: [{ message, field, help }] }`. */
const sendgridError = (status: number, field: string | null, headers: Record<string, string> = {}) => ({
  reply: status,
  headers,
  body: { errors: [{ message: `refused for ada@example.com (fake)`, field, help: null }] },
});

describe('SendGridTransport against a SendGrid v3 Mail Send fake', () => {
  let fake: ScriptedHttpServer;

  beforeAll(async () => {
    fake = await ScriptedHttpServer.start((req) =>
      req.method === 'POST' && req.path === '/v3/mail/send'
        ? { reply: 202, headers: { 'x-message-id': 'W3hB2iM7SfmqjOu1V3Z5Aw' } }
        : { reply: 404, body: { errors: [{ message: 'not found' }] } },
    );
  });
  afterAll(async () => {
    await fake.stop();
  });

  const transport = (baseUrl = fake.url) =>
    new SendGridTransport({
      baseUrl,
      from: 'receipts@sendproof.test',
      apiKey: async () => 'SG.test-key',
      timeouts: { responseTimeoutMs: 300 },
    });

  it('declares no idempotency key and no lookup, only pushed evidence', () => {
    // Assess
    expect(transport().capabilities).toMatchObject({
      idempotencyKey: false,
      keyRetentionSeconds: 0,
      lookupByKey: false,
      lookupByProviderId: false,
      pushEvidence: true,
    });
  });

  it('202 is accepted with X-Message-Id; the key hash rides in custom_args, attachments in base64', async () => {
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
    expect(result).toEqual({ kind: 'accepted', providerMessageId: 'W3hB2iM7SfmqjOu1V3Z5Aw' });
    const req = fake.requests.at(-1)!;
    expect(req.headers.authorization).toBe('Bearer SG.test-key');
    expect(req.headers['idempotency-key']).toBeUndefined();
    const body = JSON.parse(req.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      personalizations: [{ to: [{ email: 'ada@example.com' }] }],
      from: { email: 'receipts@sendproof.test' },
      subject: 'Your receipt',
      content: [
        { type: 'text/plain', value: 'Thanks for your order.' },
        { type: 'text/html', value: '<p>Thanks for your order.</p>' },
      ],
      attachments: [
        { filename: 'r.pdf', type: 'application/pdf', content: 'AQID', disposition: 'attachment' },
      ],
    });
    expect(body.custom_args).toEqual({ sendproof_key: message.label });
  });

  it('classifies the documented status codes: 4xx refused, 429 retryable with its reset, 5xx ambiguous', async () => {
    // Prepare
    const reset = String(Math.floor(Date.now() / 1000) + 30);
    const cases: Array<[ReturnType<typeof sendgridError>, string]> = [
      [sendgridError(400, 'personalizations.0.to'), 'rejected'],
      [sendgridError(401, null), 'rejected'],
      [sendgridError(403, 'from.email'), 'rejected'],
      [sendgridError(413, null), 'rejected'],
      [sendgridError(429, null, { 'x-ratelimit-reset': reset }), 'retryable'],
      [sendgridError(500, null), 'ambiguous'],
      [sendgridError(503, null), 'ambiguous'],
    ];
    const results = [];
    for (const [behaviour] of cases) {
      fake.enqueue(behaviour);
      results.push(await transport().send(emailMessage(), keyFor('k')));
    }
    // Assess
    expect(results.map((r) => r.kind)).toEqual(cases.map(([, kind]) => kind));
    expect(results[0]).toMatchObject({ code: 'sendgrid_400:personalizations.0.to' });
    const limited = results[4] as { retryAfterMs?: number };
    expect(limited.retryAfterMs).toBeGreaterThan(20_000);
    expect(limited.retryAfterMs).toBeLessThanOrEqual(30_000);
    // The error message quotes the address; the result keeps only status and field.
    expect(JSON.stringify(results)).not.toContain('ada@example.com');
  });

  it('a 202 without X-Message-Id is ambiguous; a refused connection never left', async () => {
    // Prepare
    fake.enqueue({ reply: 202 });
    // Act
    const noId = await transport().send(emailMessage(), keyFor('k'));
    const closed = await transport(`http://127.0.0.1:${await closedPort()}`).send(
      emailMessage(),
      keyFor('k'),
    );
    // Assess
    expect(noId).toEqual({ kind: 'ambiguous', reason: 'accepted_without_message_id' });
    expect(closed.kind).toBe('retryable');
  });
});
