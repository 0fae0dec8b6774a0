import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type RunningProviderSimulator,
  type SimRequest,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { ManualClock } from '../../support/manualClock.js';

const sms = { to: '+15555550123', text: 'Your code is 123456' };
const email = { to: 'ada@example.com', subject: 'Receipt', text: 'Thanks' };

describe('provider simulator (test double) over real HTTP', () => {
  let sim: RunningProviderSimulator;
  const clock = new ManualClock();

  beforeAll(async () => {
    sim = await startProviderSimulator({ keyRetentionSeconds: 60, clock });
  });

  afterEach(async () => {
    await fetch(`${sim.url}/_sim`, { method: 'DELETE' });
  });

  afterAll(async () => {
    await sim.stop();
  });

  const send = (channel: 'email' | 'sms', body: unknown, key?: string) =>
    fetch(`${sim.url}/v1/${channel}/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify(body),
    });
  const fault = (body: unknown) =>
    fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const requests = async () => (await (await fetch(`${sim.url}/_sim/requests`)).json()) as SimRequest[];
  const byKey = async (key: string) =>
    (
      (await (await fetch(`${sim.url}/v1/messages?idempotency_key=${key}`)).json()) as {
        data: Array<{ id: string }>;
      }
    ).data;

  it('binds to loopback', () => {
    // Assess
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('accepts a send, then finds it by key and by id', async () => {
    // Act
    const res = await send('sms', sms, 'k-accept');
    const body = (await res.json()) as { id: string; status: string };
    const listed = await byKey('k-accept');
    const one = await fetch(`${sim.url}/v1/messages/${body.id}`);
    const missing = await fetch(`${sim.url}/v1/messages/sim_nope`);

    // Assess
    expect(res.status).toBe(200);
    expect(body.status).toBe('accepted');
    expect(listed).toEqual([
      {
        id: body.id,
        idempotencyKey: 'k-accept',
        channel: 'sms',
        status: 'accepted',
        createdAt: expect.any(String),
      },
    ]);
    expect(((await one.json()) as { id: string }).id).toBe(body.id);
    expect(missing.status).toBe(404);
    expect(await requests()).toEqual([
      {
        idempotencyKey: 'k-accept',
        channel: 'sms',
        to: sms.to,
        outcome: 'accepted',
        messageId: body.id,
        at: expect.any(String),
      },
    ]);
  });

  it('a replay within retention returns the same id with Idempotent-Replayed and is logged as replayed', async () => {
    // Prepare
    const first = (await (await send('email', email, 'k-replay')).json()) as { id: string };
    clock.advance(59_000);

    // Act
    const again = await send('email', email, 'k-replay');

    // Assess
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as { id: string }).id).toBe(first.id);
    expect((await requests()).map((r) => r.outcome)).toEqual(['accepted', 'replayed']);
    expect(await byKey('k-replay')).toHaveLength(1);
  });

  it('a replay after the retention window is a new send with a new id', async () => {
    // Prepare
    const first = (await (await send('sms', sms, 'k-expired')).json()) as { id: string };
    clock.advance(60_001);

    // Act
    const again = await send('sms', sms, 'k-expired');
    const second = (await again.json()) as { id: string };

    // Assess
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(second.id).not.toBe(first.id);
    expect((await requests()).map((r) => r.outcome)).toEqual(['accepted', 'accepted']);
    expect(await byKey('k-expired')).toHaveLength(2);
  });

  it('the same key with a different body is a 409 invalid_idempotent_request', async () => {
    // Prepare
    await send('sms', sms, 'k-mismatch');

    // Act
    const res = await send('sms', { ...sms, text: 'Your code is 654321' }, 'k-mismatch');

    // Assess
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_idempotent_request');
    expect((await requests()).map((r) => r.outcome)).toEqual(['accepted', 'rejected']);
  });

  it('a syntactically invalid destination is a 422 invalid_destination; a malformed body is a 400', async () => {
    // Act
    const badPhone = await send('sms', { ...sms, to: '5550123' }, 'k-bad');
    const badEmail = await send('email', { ...email, to: 'not-an-address' }, 'k-bad-email');
    const malformed = await send('email', { to: 'ada@example.com' }, 'k-malformed');

    // Assess
    expect(badPhone.status).toBe(422);
    expect(await badPhone.json()).toEqual({ error: 'invalid_destination' });
    expect(badEmail.status).toBe(422);
    expect(malformed.status).toBe(400);
    expect(await byKey('k-bad')).toEqual([]);
  });

  it('accept_then_drop stores the message and destroys the connection without an answer', async () => {
    // Prepare
    expect((await fault({ match: { idempotencyKey: 'k-atd' }, fault: 'accept_then_drop' })).status).toBe(201);

    // Act
    const attempt = send('sms', sms, 'k-atd');

    // Assess
    await expect(attempt).rejects.toThrow();
    const [logged] = await requests();
    expect(logged).toMatchObject({ outcome: 'dropped', messageId: expect.stringMatching(/^sim_/) });
    expect((await byKey('k-atd')).map((m) => m.id)).toEqual([logged?.messageId]);
  });

  it('drop_before_accept destroys the connection and stores nothing', async () => {
    // Prepare
    await fault({ match: { channel: 'sms' }, fault: 'drop_before_accept' });

    // Act
    const attempt = send('sms', sms, 'k-dba');

    // Assess
    await expect(attempt).rejects.toThrow();
    const [logged] = await requests();
    expect(logged?.outcome).toBe('dropped');
    expect(logged?.messageId).toBeUndefined();
    expect(await byKey('k-dba')).toEqual([]);
  });

  it('status_429 answers 429 with Retry-After and is logged as throttled', async () => {
    // Prepare
    await fault({ match: {}, fault: 'status_429', retryAfterSeconds: 7 });

    // Act
    const res = await send('email', email, 'k-429');

    // Assess
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect((await requests())[0]?.outcome).toBe('throttled');
    expect(await byKey('k-429')).toEqual([]);
  });

  it('status_500 answers 500 and is logged as error', async () => {
    // Prepare
    await fault({ match: {}, fault: 'status_500' });

    // Act
    const res = await send('email', email, 'k-500');

    // Assess
    expect(res.status).toBe(500);
    expect((await requests())[0]?.outcome).toBe('error');
  });

  it('reject answers 422 invalid_destination for a valid destination and is logged as rejected', async () => {
    // Prepare
    await fault({ match: { to: sms.to }, fault: 'reject' });

    // Act
    const res = await send('sms', sms, 'k-reject');

    // Assess
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ error: 'invalid_destination' });
    expect((await requests())[0]?.outcome).toBe('rejected');
  });

  it('delay holds the answer for delayMs and still accepts', async () => {
    // Prepare
    await fault({ match: {}, fault: 'delay', delayMs: 300 });
    const started = Date.now();

    // Act
    const res = await send('sms', sms, 'k-delay');

    // Assess
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect((await requests())[0]?.outcome).toBe('accepted');
  });

  it('a fault applies to the first `times` matching requests only, and not to requests it does not match', async () => {
    // Prepare
    await fault({ match: { channel: 'sms' }, fault: 'status_500', times: 2 });

    // Act
    const statuses: number[] = [];
    statuses.push((await send('email', email, 'k-other-channel')).status);
    for (const key of ['k-t1', 'k-t2', 'k-t3']) statuses.push((await send('sms', sms, key)).status);

    // Assess
    expect(statuses).toEqual([200, 500, 500, 200]);
    expect((await requests()).map((r) => r.outcome)).toEqual(['accepted', 'error', 'error', 'accepted']);
  });

  it('DELETE /_sim resets messages, requests and faults', async () => {
    // Prepare
    await send('sms', sms, 'k-reset');
    await fault({ match: {}, fault: 'status_500', times: 5 });

    // Act
    const reset = await fetch(`${sim.url}/_sim`, { method: 'DELETE' });
    const after = await send('sms', sms, 'k-reset');

    // Assess
    expect(reset.status).toBe(200);
    expect(after.status).toBe(200);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect((await requests()).map((r) => r.outcome)).toEqual(['accepted']);
    expect(await byKey('k-reset')).toHaveLength(1);
  });

  it('POST /_sim/faults rejects a malformed body with 400 and a clear error', async () => {
    // Act
    const notJson = await fetch(`${sim.url}/_sim/faults`, { method: 'POST', body: '{nope' });
    const unknownFault = await fault({ match: {}, fault: 'explode' });
    const delayWithoutMs = await fault({ match: {}, fault: 'delay' });
    const zeroTimes = await fault({ match: {}, fault: 'status_500', times: 0 });
    const badChannel = await fault({ match: { channel: 'fax' }, fault: 'reject' });
    const extraField = await fault({ match: {}, fault: 'reject', when: 'always' });

    // Assess
    for (const res of [notJson, unknownFault, delayWithoutMs, zeroTimes, badChannel, extraField])
      expect(res.status).toBe(400);
    const body = (await delayWithoutMs.json()) as {
      error: string;
      issues: Array<{ field: string; message: string }>;
    };
    expect(body.error).toBe('invalid_fault');
    expect(body.issues).toContainEqual({ field: 'delayMs', message: 'a delay fault needs delayMs' });
    expect(((await badChannel.json()) as { issues: Array<{ field: string }> }).issues[0]?.field).toBe(
      'match.channel',
    );
    // Nothing malformed was registered.
    expect((await send('sms', sms, 'k-after-bad-faults')).status).toBe(200);
  });
});

describe('lib/simulator/main.ts (standalone)', () => {
  it('prints its URL and serves the admin API until it is stopped', async () => {
    // Prepare
    const child = spawn(process.execPath, ['--import', 'tsx', 'lib/simulator/main.ts', '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      // Act
      const url = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
      });
      const health = await fetch(`${url}/_sim/health`);

      // Assess
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(health.status).toBe(200);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});
