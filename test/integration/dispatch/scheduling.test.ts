import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseIntent } from '../../../lib/domain/intent.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { cancelNotifications } from '../../../lib/publish/cancelNotifications.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { createHarness, type Harness, NoticeQueue, sweeperFor } from '../../support/dispatchHarness.js';
import { MARKERS, receiptIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1.
let sim: RunningProviderSimulator;
let h: Harness;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}`, receiveCount: 1 });
const MIN = 60_000;

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
});
afterAll(async () => {
  await sim.stop();
});
beforeEach(() => {
  sim.reset();
  clock.set(Date.now());
});

const scheduledReceipt = (eventId: string, sendAtMs: number) =>
  receiptIntent({
    eventId,
    recipient: { ref: 'player-73', email: MARKERS.email, phone: MARKERS.phone },
    channels: ['email', 'sms'],
    sendAt: new Date(sendAtMs).toISOString(),
  });

describe('scheduled send', () => {
  it('a receipt scheduled 10 min ahead on email and SMS, refunded after 1 min: neither channel is sent, both rows cancelled with operator and reason', async () => {
    // Prepare
    const sendAt = clock.now() + 10 * MIN;
    const body = JSON.stringify(scheduledReceipt('pay_refund-1', sendAt));
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices);
    // Act: published and claimed at once as scheduled; refunded a minute later; then the due time passes
    const published = await h.dispatcher().handle(body, envelope());
    clock.advance(MIN);
    const report = await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock },
      {
        tenant: 'acme-games',
        eventId: 'pay_refund-1',
        reason: 'payment refunded (RF-2231)',
        operator: 'ana',
      },
    );
    clock.advance(10 * MIN);
    const due = await sweeper.sweep();
    await notices.deliver(h.dispatcher({ workerId: 'dispatch:due' }));
    clock.advance(2 * MIN);
    const after = await sweeper.sweep();
    // Assess
    expect(published.disposition).toBe('done');
    expect(published.channels.map((c) => [c.channel, c.state, c.action])).toEqual([
      ['email', 'scheduled', 'scheduled'],
      ['sms', 'scheduled', 'scheduled'],
    ]);
    expect(report.committed).toBe(true);
    expect(report.rows.map((r) => [r.channel, r.outcome.result])).toEqual(
      expect.arrayContaining([
        ['email', 'cancelled'],
        ['sms', 'cancelled'],
      ]),
    );
    expect(sim.requests()).toHaveLength(0);
    for (const c of published.channels) {
      const row = await h.ledger.get(c.dedupeKey);
      expect(row?.state).toBe('cancelled');
      expect(row?.history.at(-1)).toMatchObject({
        s: 'cancelled',
        by: 'operator:ana',
        why: 'cancelled:*/*:by=operator:ana:row_cancelled:payment refunded (RF-2231)',
      });
      expect(row?.history.map((e) => e.s)).toEqual(['scheduled', 'cancelled']);
    }
    // Nothing left to resume: the sweep releases the seal instead of waking it.
    expect(due.resumed + after.resumed).toBe(0);
    expect(due.released + after.released).toBe(1);
  });

  it('a scheduled intent published twice makes one row per channel, and is sent once when due', async () => {
    // Prepare
    const sendAt = clock.now() + 5 * MIN;
    const body = JSON.stringify(scheduledReceipt('pay_twice', sendAt));
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices);
    // Act
    const first = await h.dispatcher().handle(body, envelope());
    const second = await h.dispatcher({ workerId: 'dispatch:dup' }).handle(body, envelope());
    const early = await sweeper.sweep();
    clock.advance(5 * MIN);
    const due = await sweeper.sweep();
    const [resumed] = await notices.deliver(h.dispatcher({ workerId: 'dispatch:due' }));
    // Assess
    expect(first.channels.map((c) => c.state)).toEqual(['scheduled', 'scheduled']);
    expect(second.disposition).toBe('done');
    expect(second.channels.map((c) => c.action)).toEqual(['scheduled', 'scheduled']);
    const rows = (await h.queries.findByEvent('pay_twice')).filter((r) => r.kind === 'delivery');
    expect(rows).toHaveLength(2);
    expect(early.resumed).toBe(0);
    expect(due.resumed).toBe(1);
    expect(resumed?.channels.map((c) => c.state)).toEqual(['accepted', 'accepted']);
    expect(sim.messages()).toHaveLength(2);
    for (const row of rows) {
      const final = await h.ledger.get(row.pk);
      expect(final?.history.map((e) => e.s)).toEqual(['scheduled', 'dispatching', 'accepted']);
    }
  });

  it('a scheduled reset whose expiry passes before sendAt is expired at the due time, not sent', async () => {
    // Prepare: a message that bypassed the publisher (which refuses sendAt ≥ expiresAt)
    const now = clock.now();
    const intent = resetIntent(
      {
        eventId: 'rst_sched-exp',
        sendAt: new Date(now + 8 * MIN).toISOString(),
        expiresAt: new Date(now + 5 * MIN).toISOString(),
      },
      now,
    );
    const refused = parseIntent(intent, { purposes: new PurposeRegistry(), clock });
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices);
    // Act
    const published = await h.dispatcher().handle(JSON.stringify(intent), envelope());
    clock.advance(8 * MIN);
    await sweeper.sweep();
    const [due] = await notices.deliver(h.dispatcher({ workerId: 'dispatch:due' }));
    // Assess
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.error.issues).toEqual([
      { field: 'sendAt', message: 'must be before expiresAt' },
    ]);
    expect(published.channels[0]?.state).toBe('scheduled');
    expect(due?.channels[0]).toMatchObject({ state: 'expired', action: 'expired' });
    expect(sim.requests()).toHaveLength(0);
    const row = await h.ledger.get(published.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => [e.s, e.why])).toEqual([
      ['scheduled', `scheduled_for:${intent.sendAt}`],
      ['expired', 'expired_before_dispatch'],
    ]);
  });

  it('a cancel scoped to SMS stops only SMS; the email goes out when due', async () => {
    // Prepare
    const body = JSON.stringify(scheduledReceipt('pay_sms-only', clock.now() + 3 * MIN));
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices);
    // Act
    const published = await h.dispatcher().handle(body, envelope());
    // The application knows its keys (publishIntents returns them): the rows are read by key, no scan.
    const report = await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock },
      {
        tenant: 'acme-games',
        eventId: 'pay_sms-only',
        dedupeKeys: published.channels.map((c) => c.dedupeKey),
        channel: 'sms',
        reason: 'player opted for email only',
        operator: 'bo',
      },
    );
    clock.advance(3 * MIN);
    await sweeper.sweep();
    const [due] = await notices.deliver(h.dispatcher({ workerId: 'dispatch:due' }));
    // Assess
    expect(report.rows.map((r) => [r.channel, r.outcome.result])).toEqual([['sms', 'cancelled']]);
    expect(due?.channels.map((c) => [c.channel, c.state, c.action])).toEqual([
      ['email', 'accepted', 'sent'],
      ['sms', 'cancelled', 'already_final'],
    ]);
    expect(sim.requests().map((r) => r.channel)).toEqual(['email']);
  });

  it('a cancel reason holding an address is refused before anything is written', async () => {
    await expect(
      cancelNotifications(
        { ledger: h.ledger, queries: h.queries, clock },
        { eventId: 'pay_contact', reason: 'refund for ana@example.com', operator: 'ana' },
      ),
    ).rejects.toThrow(/reason: looks like it holds an email address/);
    expect(await h.ledger.getCancelMarker('default', 'pay_contact')).toBeUndefined();
  });

  it('a password reset is not cancellable: the command refuses it by purpose', async () => {
    await expect(
      cancelNotifications(
        { ledger: h.ledger, queries: h.queries, clock },
        { eventId: 'rst_x', purpose: 'password-reset', reason: 'no reason at all', operator: 'ana' },
      ),
    ).rejects.toThrow(/not cancellable/);
  });
});
