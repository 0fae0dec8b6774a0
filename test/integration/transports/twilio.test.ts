import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwilioTransport } from '../../../lib/transports/TwilioTransport.js';
import { closedPort, keyFor, smsMessage } from '../../support/fakes/outbound.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';
import { ManualClock } from '../../support/manualClock.js';

const SID = 'AC00000000000000000000000000000001';
const MESSAGES = `/2010-04-01/Accounts/${SID}/Messages.json`;

/** Twilio's documented error body: `{ code, message, more_info, status }`. */
const twilioError = (status: number, code: number, headers: Record<string, string> = {}) => ({
  reply: status,
  headers,
  body: {
    code,
    message: `error ${code} (fake)`,
    more_info: `https://www.twilio.com/docs/errors/${code}`,
    status,
  },
});

describe('TwilioTransport against a Twilio Messages API fake', () => {
  let fake: ScriptedHttpServer;
  const clock = new ManualClock();

  beforeAll(async () => {
    fake = await ScriptedHttpServer.start((req) =>
      req.method === 'POST' && req.path === MESSAGES
        ? { reply: 201, body: { sid: 'SM00000000000000000000000000000001', status: 'queued' } }
        : twilioError(404, 20404),
    );
  });

  afterAll(async () => {
    await fake.stop();
  });

  const transport = (baseUrl = fake.url, from = '+15005550006') =>
    new TwilioTransport({
      baseUrl,
      from,
      credentials: async () => ({ accountSid: SID, authToken: 'token-1' }),
      timeouts: { responseTimeoutMs: 300 },
      clock,
    });

  it('an accepted send returns the SID and posts a basic-authenticated form', async () => {
    // Prepare
    const message = smsMessage({ expiresAtMs: clock.now() + 600_000 });

    // Act
    const result = await transport().send(message, keyFor(message.dedupeKey));

    // Assess
    expect(result).toEqual({ kind: 'accepted', providerMessageId: 'SM00000000000000000000000000000001' });
    const req = fake.requests.at(-1)!;
    expect(req.path).toBe(MESSAGES);
    expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(req.headers.authorization).toBe(`Basic ${Buffer.from(`${SID}:token-1`).toString('base64')}`);
    const form = new URLSearchParams(req.body);
    expect(form.get('To')).toBe('+15555550123');
    expect(form.get('From')).toBe('+15005550006');
    expect(form.get('Body')).toBe('Your code is 123456');
    expect(form.get('ValidityPeriod')).toBe('600');
  });

  it('sends from a Messaging Service when the origination identity is an MG SID', async () => {
    // Act
    await transport(fake.url, 'MG00000000000000000000000000000001').send(smsMessage(), keyFor('mg'));

    // Assess
    const form = new URLSearchParams(fake.requests.at(-1)!.body);
    expect(form.get('MessagingServiceSid')).toBe('MG00000000000000000000000000000001');
    expect(form.has('From')).toBe(false);
  });

  it('429 / 20429 is retryable with retry-after: Twilio never processed it', async () => {
    // Prepare
    fake.enqueue(twilioError(429, 20429, { 'retry-after': '3' }));

    // Act
    const result = await transport().send(smsMessage(), keyFor('t'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'twilio_20429', retryAfterMs: 3_000 });
  });

  it("400 21211 (invalid 'To') is permanent", async () => {
    // Prepare
    fake.enqueue(twilioError(400, 21211));

    // Act
    const result = await transport().send(smsMessage({ to: '+1555' }), keyFor('i'));

    // Assess
    expect(result).toEqual({
      kind: 'rejected',
      reason: 'twilio_21211',
      code: 'twilio_21211',
      cause: 'recipient',
    });
  });

  it('400 21610 (unsubscribed recipient) is a rejection caused by an opt-out', async () => {
    // Prepare: the recipient replied STOP to this sender
    fake.enqueue(twilioError(400, 21610));

    // Act
    const result = await transport().send(smsMessage(), keyFor('o'));

    // Assess: never retried, never routed through another provider
    expect(result).toEqual({
      kind: 'rejected',
      reason: 'twilio_21610',
      code: 'twilio_21610',
      cause: 'opted_out',
    });
  });

  it('a 5xx after the request left is ambiguous', async () => {
    // Prepare
    fake.enqueue(twilioError(500, 20500));

    // Act
    const result = await transport().send(smsMessage(), keyFor('5'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'provider_error_after_send:twilio_20500' });
  });

  it('a socket destroyed after the request was read is ambiguous', async () => {
    // Prepare
    fake.enqueue({ destroyAfterRequest: true });

    // Act
    const result = await transport().send(smsMessage(), keyFor('d'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:ECONNRESET' });
  });

  it('no answer within the response timeout is ambiguous', async () => {
    // Prepare
    fake.enqueue({ hang: true });

    // Act
    const result = await transport().send(smsMessage(), keyFor('h'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'provider_timeout_after_send' });
  });

  it('connection refused is retryable', async () => {
    // Prepare
    const port = await closedPort();

    // Act
    const result = await transport(`http://127.0.0.1:${port}`).send(smsMessage(), keyFor('r'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' });
  });

  it('looks a message up by SID: found, failed, unknown, and no SID at all', async () => {
    // Prepare
    fake.enqueue(
      { reply: 200, body: { sid: 'SM1', status: 'delivered' } },
      { reply: 200, body: { sid: 'SM2', status: 'failed', error_code: 30008 } },
    );

    // Act
    const delivered = await transport().lookup(keyFor('l'), 'SM1');
    const failed = await transport().lookup(keyFor('l'), 'SM2');
    const unknown = await transport().lookup(keyFor('l'), 'SM3');
    const noSid = await transport().lookup(keyFor('l'));

    // Assess
    expect(delivered).toEqual({ kind: 'accepted', providerMessageId: 'SM1' });
    expect(failed).toEqual({ kind: 'rejected', reason: 'twilio_status_failed:30008' });
    expect(fake.requests.at(-1)?.path).toBe(`/2010-04-01/Accounts/${SID}/Messages/SM3.json`);
    expect(unknown).toEqual({ kind: 'not_found' });
    expect(noSid.kind).toBe('unavailable');
  });

  it('scheduling needs a Messaging Service: SendAt with ScheduleType=fixed, then cancel by Status=canceled; 30409 is too late', async () => {
    // Prepare
    const SMSID = 'SM00000000000000000000000000000009';
    const sendAtMs = Date.parse('2026-12-03T09:00:00.000Z');
    const service = transport(fake.url, 'MG00000000000000000000000000000001');
    fake.enqueue(
      { reply: 201, body: { sid: SMSID, status: 'scheduled' } },
      { reply: 200, body: { sid: SMSID, status: 'canceled' } },
      twilioError(400, 30409),
    );
    // Act
    const sent = await service.send(smsMessage({ sendAtMs }), keyFor('t:receipt:e:r:sms'));
    const cancelled = await service.cancelScheduled(SMSID);
    const late = await service.cancelScheduled(SMSID);
    // Assess
    expect(transport().capabilities).toMatchObject({ cancel: false });
    expect(transport().capabilities.schedule).toBeUndefined();
    expect(service.capabilities).toMatchObject({ cancel: true, schedule: { minLeadSeconds: 900 } });
    expect(sent).toEqual({ kind: 'accepted', providerMessageId: SMSID });
    const form = new URLSearchParams(fake.requests.at(-3)!.body);
    expect(form.get('ScheduleType')).toBe('fixed');
    expect(form.get('SendAt')).toBe('2026-12-03T09:00:00Z');
    expect(form.get('MessagingServiceSid')).toBe('MG00000000000000000000000000000001');
    expect(fake.requests.at(-2)).toMatchObject({
      method: 'POST',
      path: `/2010-04-01/Accounts/${SID}/Messages/${SMSID}.json`,
    });
    expect(new URLSearchParams(fake.requests.at(-2)!.body).get('Status')).toBe('canceled');
    expect(cancelled).toEqual({ kind: 'cancelled' });
    expect(late).toEqual({ kind: 'too_late', reason: 'twilio_30409' });
  });
});
