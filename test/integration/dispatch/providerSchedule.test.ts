import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BUILT_IN_PURPOSES, PurposeRegistry } from '../../../lib/domain/purposes.js';
import { cancelNotifications } from '../../../lib/publish/cancelNotifications.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import type { Transport } from '../../../lib/transports/port.js';
import { ResendTransport } from '../../../lib/transports/ResendTransport.js';
import { createHarness, type Harness, NoticeQueue, sweeperFor } from '../../support/dispatchHarness.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';
import { receiptIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// Real servers: DynamoDB Local, the provider simulator (SMS, and the SES-style email), and a Resend API
// fake on loopback that answers as Resend documents (`POST /emails`, `POST /emails/{id}/cancel`).
let sim: RunningProviderSimulator;
let resend: ScriptedHttpServer;
let h: Harness;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}`, receiveCount: 1 });
const HOUR = 3600_000;
const RESEND_ID = '49a3999c-0ce1-4ea6-ab68-afcd6dc2e794';
let cancelAnswer: { reply: number; body: unknown } = { reply: 200, body: { object: 'email', id: RESEND_ID } };

/** Receipts handed to the provider's own scheduler when the adapter can hold (and cancel) them. */
const purposes = new PurposeRegistry(
  BUILT_IN_PURPOSES.map((p) => (p.purpose === 'receipt' ? { ...p, providerScheduling: true } : p)),
);

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
  resend = await ScriptedHttpServer.start((req) => {
    if (req.method === 'POST' && req.path === '/emails') return { reply: 200, body: { id: RESEND_ID } };
    if (req.method === 'POST' && req.path === `/emails/${RESEND_ID}/cancel`) return cancelAnswer;
    return { reply: 404, body: { statusCode: 404, name: 'not_found', message: 'not found' } };
  });
});
afterAll(async () => {
  await resend.stop();
  await sim.stop();
});
beforeEach(() => {
  sim.reset();
  resend.requests.length = 0;
  clock.set(Date.now());
});

const resendTransport = () =>
  new ResendTransport({
    baseUrl: resend.url,
    from: 'Receipts <r@sendproof.test>',
    apiKey: async () => 're_test',
  });

/** The simulator's HTTP transport with SES's capabilities: no keys, no scheduling, no cancel. */
const sesStyle = (): Transport => {
  const inner = h.transports.email;
  return {
    name: 'ses',
    channel: 'email',
    capabilities: { ...inner.capabilities, idempotencyKey: false, keyRetentionSeconds: 0, cancel: false },
    send: (m, k) => inner.send(m, k),
  };
};

const cancelRoute = () => resend.requests.filter((r) => r.path === `/emails/${RESEND_ID}/cancel`);

describe('provider-side scheduling and cancel', () => {
  it('Resend-style: the receipt is handed over with scheduled_at, the refund calls the cancel route once, the row is cancelled with the answer', async () => {
    // Prepare
    const sendAt = clock.now() + 2 * HOUR;
    const transports = { email: resendTransport(), sms: h.transports.sms };
    const dispatcher = h.dispatcher({ transports, purposes });
    const body = JSON.stringify(
      receiptIntent({ eventId: 'pay_resend-sched', sendAt: new Date(sendAt).toISOString() }),
    );
    cancelAnswer = { reply: 200, body: { object: 'email', id: RESEND_ID } };
    const notices = new NoticeQueue();
    // Act
    const handed = await dispatcher.handle(body, envelope());
    clock.advance(60_000);
    const cancel = {
      tenant: 'acme-games',
      eventId: 'pay_resend-sched',
      reason: 'payment refunded',
      operator: 'ana',
    };
    const first = await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock, transports, purposes },
      cancel,
    );
    const again = await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock, transports, purposes },
      cancel,
    );
    clock.advance(3 * HOUR);
    const swept = await sweeperFor(h, clock, notices).sweep();
    // Assess
    expect(handed.channels[0]).toMatchObject({
      state: 'provider_scheduled',
      action: 'handed_to_provider_schedule',
      providerMessageId: RESEND_ID,
    });
    const sent = JSON.parse(resend.requests.find((r) => r.path === '/emails')!.body) as Record<
      string,
      unknown
    >;
    expect(sent.scheduled_at).toBe(new Date(sendAt).toISOString());
    expect(first.rows.map((r) => r.outcome)).toEqual([
      { result: 'cancelled', how: 'provider_confirmed', at: clock.now() - 3 * HOUR },
    ]);
    expect(again.committed).toBe(false);
    expect(again.rows[0]?.outcome.result).toBe('cancelled');
    expect(cancelRoute()).toHaveLength(1);
    const row = await h.ledger.get(handed.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => e.s)).toEqual(['dispatching', 'provider_scheduled', 'cancelled']);
    expect(row?.history.at(-1)).toMatchObject({
      by: 'operator:ana',
      why: `cancelled:*/*:by=operator:ana:provider_confirmed:${RESEND_ID}:payment refunded`,
    });
    expect(swept.handoffsSettled).toBe(0);
    expect(swept.released).toBe(1);
  });

  it('Resend-style: a cancel the provider refuses (already sent) is recorded as cancel_too_late with its answer', async () => {
    // Prepare
    const transports = { email: resendTransport(), sms: h.transports.sms };
    const body = JSON.stringify(
      receiptIntent({ eventId: 'pay_resend-late', sendAt: new Date(clock.now() + HOUR).toISOString() }),
    );
    cancelAnswer = {
      reply: 422,
      body: { statusCode: 422, name: 'validation_error', message: 'email can no longer be canceled' },
    };
    // Act
    const handed = await h.dispatcher({ transports, purposes }).handle(body, envelope());
    const report = await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock, transports, purposes },
      { tenant: 'acme-games', eventId: 'pay_resend-late', reason: 'payment refunded', operator: 'ana' },
    );
    // Assess
    expect(report.rows[0]?.outcome).toMatchObject({
      result: 'cancel_too_late',
      transport: 'resend',
      providerAnswer: 'resend_validation_error',
    });
    const row = await h.ledger.get(handed.channels[0]!.dedupeKey);
    expect(row?.state).toBe('provider_scheduled');
    expect(row?.history.at(-1)?.why).toMatch(
      /^cancel_too_late:\*\/\*:provider_answer=resend_validation_error:handoff=/,
    );
    expect(cancelRoute()).toHaveLength(1);
  });

  it('a Retry-After that eats the lead time never sends early: the retry waits in the ledger for sendAt, then sends plainly', async () => {
    // Prepare: sendAt 90 s ahead (Resend window floor: 60 s); the first request is throttled for 45 s
    const sendAt = clock.now() + 90_000;
    const transports = { email: resendTransport(), sms: h.transports.sms };
    const body = JSON.stringify(
      receiptIntent({ eventId: 'pay_resend-429', sendAt: new Date(sendAt).toISOString() }),
    );
    resend.enqueue({
      reply: 429,
      headers: { 'retry-after': '45' },
      body: { statusCode: 429, name: 'rate_limit_exceeded', message: 'slow down' },
    });
    const emails = () => resend.requests.filter((r) => r.path === '/emails');
    // Act: the message comes back after the Retry-After, and again at sendAt
    const first = await h.dispatcher({ transports, purposes }).handle(body, envelope());
    clock.advance(45_000);
    const second = await h.dispatcher({ transports, purposes }).handle(body, envelope());
    const beforeDue = emails().length;
    clock.advance(45_000);
    const third = await h.dispatcher({ transports, purposes }).handle(body, envelope());
    // Assess
    expect(first.channels[0]?.state).toBe('retry_wait');
    expect(second.channels[0]).toMatchObject({ state: 'retry_wait', action: 'retry_later', dueAt: sendAt });
    expect(beforeDue).toBe(1);
    expect(third.channels[0]).toMatchObject({ state: 'accepted', action: 'sent' });
    const [asked, sent] = emails().map((r) => JSON.parse(r.body) as Record<string, unknown>);
    expect(asked?.scheduled_at).toBe(new Date(sendAt).toISOString());
    expect(sent?.scheduled_at).toBeUndefined();
    const row = await h.ledger.get(third.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => e.why)).toContain('waits_for_send_at');
  });

  it('SES-style adapter (no schedule, no cancel): a cancel after handoff is cancel_too_late with the handoff time, and nothing is un-sent', async () => {
    // Prepare: an ordinary receipt, sent at once
    const transports = { email: sesStyle(), sms: h.transports.sms };
    const body = JSON.stringify(receiptIntent({ eventId: 'pay_ses-late' }));
    // Act
    const sent = await h.dispatcher({ transports }).handle(body, envelope());
    clock.advance(5 * 60_000);
    const report = await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock, transports },
      { tenant: 'acme-games', eventId: 'pay_ses-late', reason: 'payment refunded', operator: 'ana' },
    );
    // Assess
    const row = await h.ledger.get(sent.channels[0]!.dedupeKey);
    const handoffAt = row!.history.find((e) => e.s === 'dispatching')!.at;
    expect(report.rows[0]?.outcome).toEqual({ result: 'cancel_too_late', handoffAt, transport: 'ses' });
    expect(row?.state).toBe('accepted');
    expect(row?.history.at(-1)).toMatchObject({
      s: 'accepted',
      by: 'operator:ana',
      why: `cancel_too_late:*/*:handoff=${new Date(handoffAt).toISOString()}:ses:payment refunded`,
    });
    expect(sim.messages()).toHaveLength(1);
  });
});

/**
 * The Resend transport whose answer to `POST /emails` is held in flight until the test releases it (the
 * request has reached the fake; the answer has not reached the dispatcher yet).
 */
const heldAnswer = (inner: ResendTransport) => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let arrived!: () => void;
  const atProvider = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const transport: Transport = {
    name: inner.name,
    channel: inner.channel,
    capabilities: inner.capabilities,
    send: async (message, key) => {
      const answer = await inner.send(message, key);
      arrived();
      await released;
      return answer;
    },
    cancelScheduled: (id) => inner.cancelScheduled(id),
  };
  return { transport, release, atProvider };
};

describe('a cancel holds on a provider-held send (issue 26 item 8)', () => {
  const cancelWhileInFlight = async (eventId: string) => {
    const held = heldAnswer(resendTransport());
    const transports = { email: held.transport, sms: h.transports.sms };
    const body = JSON.stringify(
      receiptIntent({ eventId, sendAt: new Date(clock.now() + 2 * HOUR).toISOString() }),
    );
    const handling = h.dispatcher({ transports, purposes }).handle(body, envelope());
    await held.atProvider;
    // The cancel commits its marker after the dispatch's marker read; it gives up waiting at once.
    const report = await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock, transports, purposes },
      { tenant: 'acme-games', eventId, reason: 'payment refunded', operator: 'ana', waitMs: 0 },
    );
    held.release();
    return { report, outcome: await handling, transports, body };
  };

  it('the cancel gave up while the request was in flight: the provider_scheduled record step reads the marker and cancels at the provider', async () => {
    // Prepare
    cancelAnswer = { reply: 200, body: { object: 'email', id: RESEND_ID } };
    const notices = new NoticeQueue();
    // Act
    const { report, outcome } = await cancelWhileInFlight('pay_resend-inflight');
    clock.advance(3 * HOUR);
    await sweeperFor(h, clock, notices).sweep();
    const rerun = await cancelNotifications(
      {
        ledger: h.ledger,
        queries: h.queries,
        clock,
        transports: { email: resendTransport(), sms: h.transports.sms },
        purposes,
      },
      { tenant: 'acme-games', eventId: 'pay_resend-inflight', reason: 'payment refunded', operator: 'ana' },
    );
    // Assess: and the sweep, after sendAt, does not settle it `accepted`; the cancel's report says so
    expect(report.rows[0]?.outcome).toMatchObject({ result: 'too_late', outcome: 'dispatching' });
    expect(outcome.channels[0]).toMatchObject({ state: 'cancelled', action: 'cancelled' });
    expect(cancelRoute()).toHaveLength(1);
    const row = await h.ledger.get(outcome.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => e.s)).toEqual(['dispatching', 'provider_scheduled', 'cancelled']);
    expect(row?.history.at(-1)).toMatchObject({
      by: 'dispatch:test',
      why: `cancelled:*/*:by=operator:ana:provider_confirmed:${RESEND_ID}:payment refunded`,
    });
    expect((await h.ledger.get(row!.pk))?.state).toBe('cancelled');
    expect(rerun.rows[0]?.outcome).toMatchObject({ result: 'cancelled', how: 'provider_confirmed' });
  });

  it('the provider gives no answer to that cancel: the message comes back and the redelivery cancels it', async () => {
    // Prepare: the cancel route answers 500 once, then confirms
    cancelAnswer = { reply: 500, body: { statusCode: 500, name: 'internal_server_error', message: 'oops' } };
    // Act
    const { outcome, transports, body } = await cancelWhileInFlight('pay_resend-inflight-500');
    cancelAnswer = { reply: 200, body: { object: 'email', id: RESEND_ID } };
    clock.advance(60_000);
    const again = await h.dispatcher({ transports, purposes }).handle(body, envelope());
    // Assess
    expect(outcome.disposition).toBe('retry_later');
    expect(outcome.channels[0]).toMatchObject({ state: 'provider_scheduled', action: 'retry_later' });
    expect(again.channels[0]).toMatchObject({ state: 'cancelled', action: 'cancelled' });
    expect(cancelRoute()).toHaveLength(2);
    const row = await h.ledger.get(outcome.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => e.why?.split(':')[0])).toEqual([
      'gates_passed',
      'provider_holds_until',
      'cancel_unconfirmed',
      'cancelled',
    ]);
  });

  it('the provider refuses that cancel (already sent): recorded as cancel_too_late, the row stays provider_scheduled, asked once', async () => {
    // Prepare
    cancelAnswer = {
      reply: 422,
      body: { statusCode: 422, name: 'validation_error', message: 'email can no longer be canceled' },
    };
    // Act
    const { outcome, transports, body } = await cancelWhileInFlight('pay_resend-inflight-422');
    const again = await h.dispatcher({ transports, purposes }).handle(body, envelope());
    // Assess
    expect(outcome.channels[0]).toMatchObject({
      state: 'provider_scheduled',
      action: 'handed_to_provider_schedule',
    });
    expect(again.channels[0]).toMatchObject({ state: 'provider_scheduled' });
    expect(cancelRoute()).toHaveLength(1);
    const row = await h.ledger.get(outcome.channels[0]!.dedupeKey);
    expect(row?.state).toBe('provider_scheduled');
    expect(row?.history.at(-1)?.why).toMatch(
      /^cancel_too_late:\*\/\*:provider_answer=resend_validation_error:handoff=/,
    );
  });
});
