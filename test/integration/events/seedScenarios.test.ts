import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_PURPOSES, PurposeRegistry } from '../../../lib/domain/purposes.js';
import type { OutcomeEvent } from '../../../lib/events/outcomeEvent.js';
import { type RunningEventReceiver, startEventReceiver } from '../../../lib/events/receiver.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { type ProviderEvidence, parseLambdaEvent } from '../../../lib/evidence/events.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { cancelNotifications } from '../../../lib/publish/cancelNotifications.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import {
  createHarness,
  type Harness,
  NoticeQueue,
  pdfAttachment,
  restTransports,
  sweeperFor,
} from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { sesEventBridgeEvent, testLabelKeys } from '../../support/evidenceLabels.js';
import { healthReportIntent, MARKERS, receiptIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { startOutcomeStream } from '../../support/outcomeStream.js';
import { pushEvidenceOnly, reconcilerFor } from '../reconcile/support.js';

// Real servers: DynamoDB Local (global setup, with its stream), the provider simulator over HTTP, and a
// caller's endpoint (lib/events/receiver.ts) on 127.0.0.1 that the local event bus POSTs to. The events
// are derived from the ledger's real stream by the consumer the Lambda runs (lib/events/OutcomeConsumer.ts).
let sim: RunningProviderSimulator;
let h: Harness;
let receiver: RunningEventReceiver;
let stream: Awaited<ReturnType<typeof startOutcomeStream>>;
let recorder: EvidenceRecorder;
const clock = new ManualClock(Date.parse('2026-11-30T12:00:00Z'));
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}` });

/** An SES configuration-set event as EventBridge delivers it, about one of our rows. */
const sesEvidence = (
  row: DeliveryRecord,
  eventType: string,
  extra: Record<string, unknown> = {},
): ProviderEvidence => {
  const [parsed] = parseLambdaEvent(
    sesEventBridgeEvent(row, eventType, {
      id: `eb-${++seq}`,
      at: clock.now(),
      destination: [MARKERS.email],
      purposeTag: true,
      extra,
    }),
  );
  if (parsed?.kind !== 'evidence') throw new Error(`not evidence: ${JSON.stringify(parsed)}`);
  return parsed.evidence;
};

/** What a caller's endpoint received for one business event: type and channel, in arrival order. */
const receivedFor = (eventId: string) =>
  receiver
    .unique()
    .filter((e) => e.eventId === eventId)
    .map((e) => `${e.channel} ${e.type.replace('notification.', '')}`);

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
  receiver = await startEventReceiver();
  stream = await startOutcomeStream(h.table, [
    { url: receiver.url, tenant: 'acme-games' },
    { url: receiver.url, tenant: 'clinic' },
  ]);
  recorder = new EvidenceRecorder({
    labels: testLabelKeys,
    ledger: h.ledger,
    store: new DynamoEvidenceStore(localDynamo().doc, h.table),
    suppressions: h.suppressions,
    purposes: new PurposeRegistry(),
    clock,
  });
});
afterAll(async () => {
  await receiver?.stop();
  await sim?.stop();
});

describe('outcome events a calling service receives, per seed scenario', () => {
  it('password reset: accepted, then delivered', async () => {
    // Prepare: an SES-like provider (events pushed later)
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(resetIntent({ eventId: 'rst_7f31' }, clock.now()));

    // Act
    const out = await h.dispatcher({ transports }).handle(body, envelope());
    const row = (await h.ledger.get(out.channels[0]!.dedupeKey))!;
    clock.advance(1_500);
    await recorder.record(sesEvidence(row, 'Delivery'));
    await stream.drain();

    // Assess
    expect(receivedFor('rst_7f31')).toEqual(['email state.accepted', 'email fact.delivered']);
    const [accepted, delivered] = receiver.unique().filter((e) => e.eventId === 'rst_7f31');
    expect(accepted).toMatchObject({
      tenant: 'acme-games',
      purpose: 'password-reset',
      recipientRef: 'player-73',
      previousState: 'dispatching',
      version: 1 + 1,
      providerMessageId: row.providerMessageId,
    });
    expect(delivered).toMatchObject({
      kind: 'fact',
      fact: 'delivered',
      state: 'accepted',
      reason: 'ses:Delivery',
    });
  });

  it('receipt with fallback: the email is refused by the provider, the SMS goes out', async () => {
    // Prepare: a deployment whose receipts fall back email → SMS (a purpose's delivery mode is the
    // purpose's: every intent of a notification follows its one flow, docs/design.md)
    const receipt = BUILT_IN_PURPOSES.find((p) => p.purpose === 'receipt')!;
    const purposes = PurposeRegistry.withOverrides([{ ...receipt, defaultDelivery: 'fallback' }]);
    sim.addFault({ match: { channel: 'email' }, fault: 'reject', times: 1 });
    const body = JSON.stringify(
      receiptIntent({
        eventId: 'pay_1-ord_1',
        recipient: { ref: 'player-41', email: MARKERS.email, phone: MARKERS.phone },
        channels: ['email', 'sms'],
        delivery: 'fallback',
      }),
    );

    // Act
    await h.dispatcher({ purposes }).handle(body, envelope());
    await stream.drain();

    // Assess
    expect(receivedFor('pay_1-ord_1')).toEqual(['email state.rejected', 'sms state.accepted']);
  });

  it('health report: accepted by email, bounced, then the SMS fallback is accepted', async () => {
    // Prepare
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(healthReportIntent({ eventId: 'report-42', attachments: [pdfAttachment()] }));
    const notices = new NoticeQueue();

    // Act
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    const email = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
    clock.advance(1_500);
    await recorder.record(
      sesEvidence(email, 'Bounce', { bounce: { bounceType: 'Permanent', bounceSubType: 'General' } }),
    );
    await sweeperFor(h, clock, notices, { transports }).sweep();
    await notices.deliver(h.dispatcher({ transports }));
    await stream.drain();

    // Assess
    expect(receivedFor('report-42')).toEqual([
      'email state.accepted',
      'email fact.bounced_permanent',
      'sms state.accepted',
    ]);
    expect(receiver.unique().find((e) => e.eventId === 'report-42' && e.kind === 'fact')).toMatchObject({
      tenant: 'clinic',
      reason: 'ses:Bounce:Permanent/General',
    });
  });

  it('refunded receipt: both channels scheduled, then cancelled before anything was sent', async () => {
    // Prepare
    const body = JSON.stringify(
      receiptIntent({
        eventId: 'pay_2-ord_2',
        recipient: { ref: 'player-41', email: MARKERS.email, phone: MARKERS.phone },
        channels: ['email', 'sms'],
        sendAt: new Date(clock.now() + 20_000).toISOString(),
      }),
    );

    // Act
    await h.dispatcher().handle(body, envelope());
    clock.advance(1_000);
    await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock },
      { tenant: 'acme-games', eventId: 'pay_2-ord_2', reason: 'payment refunded', operator: 'ana' },
    );
    await stream.drain();

    // Assess: per channel in order; the two channels may interleave on the stream.
    const got = receivedFor('pay_2-ord_2');
    expect(got.filter((e) => e.startsWith('email'))).toEqual([
      'email state.scheduled',
      'email state.cancelled',
    ]);
    expect(got.filter((e) => e.startsWith('sms'))).toEqual(['sms state.scheduled', 'sms state.cancelled']);
    expect(sim.requests().filter((r) => JSON.stringify(r).includes('ord_2'))).toEqual([]);
  });

  it('SMS reset whose answer was lost: unknown, then accepted by the reconciler’s lookup', async () => {
    // Prepare
    sim.addFault({ match: { channel: 'sms' }, fault: 'accept_then_drop', times: 1 });
    const body = JSON.stringify(
      resetIntent(
        { eventId: 'rst_8a02', recipient: { ref: 'player-88', phone: MARKERS.phone }, channels: ['sms'] },
        clock.now(),
      ),
    );

    // Act
    await h.dispatcher().handle(body, envelope());
    clock.advance(60_000);
    await reconcilerFor(h.ledger, h.transports, clock).runAll();
    await stream.drain();

    // Assess
    expect(receivedFor('rst_8a02')).toEqual(['sms state.unknown', 'sms state.accepted']);
    const accepted = receiver.unique().find((e) => e.eventId === 'rst_8a02' && e.state === 'accepted')!;
    expect(accepted.previousState).toBe('unknown');
    expect(accepted.providerMessageId).toMatch(/^sim_/);
  });

  it('no event carries an address, a secret or a body', () => {
    // Assess
    const all = JSON.stringify(receiver.received);
    for (const marker of Object.values(MARKERS)) expect(all).not.toContain(marker);
    expect(all).not.toContain('Dragon skin');
  });

  it('the same stream batch delivered again gives the endpoint nothing a deduplicating caller counts twice', async () => {
    // Prepare: every record of the table's stream so far, read again from the start (a retried batch).
    const before: OutcomeEvent[] = receiver.unique();
    const total = receiver.received.length;
    const again = await startOutcomeStream(h.table, [
      { url: receiver.url, tenant: 'acme-games' },
      { url: receiver.url, tenant: 'clinic' },
    ]);

    // Act
    await again.drain();

    // Assess: every event arrived a second time, flagged as a duplicate by id; the unique list is unchanged.
    expect(receiver.received.length).toBe(2 * total);
    expect(receiver.received.slice(total).every((r) => r.duplicate)).toBe(true);
    expect(receiver.unique()).toEqual(before);
  });
});
