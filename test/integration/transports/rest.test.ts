import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { RestTransport } from '../../../lib/transports/RestTransport.js';
import { closedPort, emailMessage, keyFor, smsMessage } from '../../support/fakes/outbound.js';

describe('RestTransport against the provider simulator (real HTTP on loopback)', () => {
  let sim: RunningProviderSimulator;
  let email: RestTransport;
  let sms: RestTransport;

  beforeAll(async () => {
    sim = await startProviderSimulator({ keyRetentionSeconds: 3600 });
    const timeouts = { responseTimeoutMs: 250 };
    email = new RestTransport({ baseUrl: sim.url, channel: 'email', keyRetentionSeconds: 3600, timeouts });
    sms = new RestTransport({ baseUrl: sim.url, channel: 'sms', keyRetentionSeconds: 3600, timeouts });
  });

  afterEach(() => {
    sim.reset();
  });

  afterAll(async () => {
    await sim.stop();
  });

  it('declares a provider-enforced key, its retention and lookup by key', () => {
    // Assess
    expect(email.capabilities).toMatchObject({
      idempotencyKey: true,
      keyRetentionSeconds: 3600,
      lookupByKey: true,
    });
  });

  it('an accepted send returns the id; a retry under the same key is a replay of that id', async () => {
    // Prepare
    const message = emailMessage({
      attachments: [
        { filename: 'r.pdf', contentType: 'application/pdf', content: new Uint8Array([1, 2, 3]) },
      ],
    });
    const key = keyFor(message.dedupeKey);

    // Act
    const first = await email.send(message, key);
    const second = await email.send(message, key);

    // Assess
    expect(first).toEqual({ kind: 'accepted', providerMessageId: expect.stringMatching(/^sim_/) });
    expect(second).toEqual({
      kind: 'accepted',
      providerMessageId: first.kind === 'accepted' ? first.providerMessageId : 'none',
      replayed: true,
    });
    expect(sim.messages()).toHaveLength(1);
    expect(sim.messages()[0]?.body.attachments).toEqual([
      { filename: 'r.pdf', contentType: 'application/pdf', contentBase64: 'AQID' },
    ]);
  });

  it('the same key with different content is ambiguous: the provider holds the key from the first request', async () => {
    // Prepare
    const key = keyFor('mismatch');
    await sms.send(smsMessage({ text: 'code 111111' }), key);

    // Act
    const result = await sms.send(smsMessage({ text: 'code 222222' }), key);

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'invalid_idempotent_request' });
  });

  it('429 is retryable with retryAfterMs from the Retry-After header', async () => {
    // Prepare
    sim.addFault({ match: { channel: 'sms' }, fault: 'status_429', retryAfterSeconds: 2 });

    // Act
    const result = await sms.send(smsMessage(), keyFor('t'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'rate_limited', retryAfterMs: 2_000 });
  });

  it('an invalid destination is permanent', async () => {
    // Act
    const result = await sms.send(smsMessage({ to: '555-0123' }), keyFor('bad'));

    // Assess
    expect(result).toEqual({
      kind: 'rejected',
      reason: 'invalid_destination',
      code: 'invalid_destination',
      cause: 'recipient',
    });
  });

  it('a 5xx after the request left is ambiguous', async () => {
    // Prepare
    sim.addFault({ match: {}, fault: 'status_500' });

    // Act
    const result = await email.send(emailMessage(), keyFor('5'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'provider_error_after_send:internal_error' });
  });

  it('connection refused is retryable', async () => {
    // Prepare
    const port = await closedPort();
    const offline = new RestTransport({ baseUrl: `http://127.0.0.1:${port}`, channel: 'sms' });

    // Act
    const result = await offline.send(smsMessage(), keyFor('r'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' });
  });

  it('accept_then_drop is ambiguous, and lookup by key finds the accepted message', async () => {
    // Prepare
    const key = keyFor('accepted-then-dropped');
    sim.addFault({ match: { idempotencyKey: key }, fault: 'accept_then_drop' });

    // Act
    const result = await email.send(emailMessage(), key);
    const found = await email.lookup(key);

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:ECONNRESET' });
    expect(found).toEqual({ kind: 'accepted', providerMessageId: sim.messages()[0]?.id });
  });

  it('drop_before_accept is ambiguous, and lookup by key reports not_found', async () => {
    // Prepare
    const key = keyFor('dropped-before-accept');
    sim.addFault({ match: { idempotencyKey: key }, fault: 'drop_before_accept' });

    // Act
    const result = await email.send(emailMessage(), key);
    const found = await email.lookup(key);

    // Assess
    expect(result.kind).toBe('ambiguous');
    expect(found).toEqual({ kind: 'not_found' });
  });

  it('a response slower than the timeout is ambiguous, and the message was in fact accepted', async () => {
    // Prepare
    const key = keyFor('slow');
    sim.addFault({ match: { idempotencyKey: key }, fault: 'delay', delayMs: 1_000 });

    // Act
    const result = await sms.send(smsMessage(), key);
    const found = await sms.lookup(key);

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'provider_timeout_after_send' });
    expect(found.kind).toBe('accepted');
  });

  it('lookup falls back to the provider id, and is unavailable when the provider cannot be reached', async () => {
    // Prepare
    const sent = await sms.send(smsMessage(), keyFor('by-id'));
    const id = sent.kind === 'accepted' ? sent.providerMessageId : 'none';
    const port = await closedPort();
    const offline = new RestTransport({ baseUrl: `http://127.0.0.1:${port}`, channel: 'sms' });

    // Act
    const byId = await sms.lookup(keyFor('some-other-key'), id);
    const unreachable = await offline.lookup(keyFor('by-id'));

    // Assess
    expect(byId).toEqual({ kind: 'accepted', providerMessageId: id });
    expect(unreachable).toEqual({ kind: 'unavailable', reason: 'lookup_failed:ECONNREFUSED' });
  });
});
