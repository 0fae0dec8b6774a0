import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { labelCarriesKey } from '../../../lib/domain/keys.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { type ProviderEvidence, parseLambdaEvent } from '../../../lib/evidence/events.js';
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
import { type Echoed, labelOf, sesTags, smsContext, testLabelKeys } from '../../support/evidenceLabels.js';
import { healthReportIntent, MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { pushEvidenceOnly, reconcilerFor } from './support.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1.
let sim: RunningProviderSimulator;
let h: Harness;
let recorder: EvidenceRecorder;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}` });

/** An SES v2 configuration-set event as EventBridge delivers it (detail = the SES event JSON). */
const sesEvent = (
  key: Echoed,
  eventType: string,
  messageId: string,
  extra: Record<string, unknown> = {},
) => ({
  version: '0',
  id: `eb-${++seq}`,
  'detail-type': 'Email Delivered',
  source: 'aws.ses',
  detail: {
    eventType,
    mail: {
      timestamp: new Date(clock.now()).toISOString(),
      messageId,
      destination: [MARKERS.email],
      tags: { ...sesTags(key), 'sendproof-purpose': ['password-reset'] } as Record<string, string[]>,
    },
    ...extra,
  },
});

/** An End User Messaging SMS event as the SNS subscription delivers it. */
const smsSnsEvent = (key: Echoed, messageStatus: string, messageId: string) => ({
  Records: [
    {
      EventSource: 'aws:sns',
      Sns: {
        MessageId: `sns-${++seq}`,
        Message: JSON.stringify({
          eventType: `TEXT_${messageStatus}`,
          eventVersion: '1.0',
          isFinal: true,
          destinationPhoneNumber: MARKERS.phone,
          messageId,
          messageStatus,
          context: smsContext(key),
        }),
      },
    },
  ],
});

const evidenceOf = (event: unknown): ProviderEvidence => {
  const [parsed] = parseLambdaEvent(event);
  if (parsed?.kind !== 'evidence') throw new Error(`not evidence: ${JSON.stringify(parsed)}`);
  return parsed.evidence;
};

/** An email the SES-like provider accepted but whose answer was lost: an honest unknown row. */
const unknownEmail = async (eventId: string) => {
  const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
  sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
  const body = JSON.stringify(resetIntent({ eventId }, clock.now()));
  const first = await h.dispatcher({ transports }).handle(body, envelope());
  const row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
  expect(row.state).toBe('unknown');
  return { row, transports };
};

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
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
  await sim.stop();
});
beforeEach(() => {
  sim.reset();
  clock.set(Date.now());
});

describe('evidence recorder', () => {
  it('the same SES Delivery event recorded twice makes one transition', async () => {
    // Prepare
    const { row } = await unknownEmail('ev-twice');
    const event = sesEvent(row, 'Delivery', 'ses-0001');
    // Act
    const first = await recorder.record(evidenceOf(event));
    const second = await recorder.record(evidenceOf(event));
    // Assess
    expect(first).toMatchObject({ kind: 'recorded', state: 'accepted' });
    expect(second.kind).toBe('duplicate');
    const after = await h.ledger.get(row.pk);
    expect(after).toMatchObject({
      state: 'accepted',
      providerMessageId: 'ses-0001',
      version: row.version + 1,
    });
    expect(after?.evidenceIds).toEqual(['ses:ses-0001:Delivery']);
    expect(after?.history.at(-1)).toMatchObject({ s: 'accepted', by: 'evidence:ses', why: 'ses:Delivery' });
  });

  it('the same SES event delivered twice at once still makes one transition', async () => {
    // Prepare
    const { row } = await unknownEmail('ev-concurrent');
    const evidence = evidenceOf(sesEvent(row, 'Send', 'ses-0002'));
    // Act
    const results = await Promise.all([recorder.record(evidence), recorder.record(evidence)]);
    // Assess
    expect(results.filter((r) => r.kind === 'recorded')).toHaveLength(1);
    const after = await h.ledger.get(row.pk);
    expect(after?.history.filter((e) => e.s === 'accepted')).toHaveLength(1);
    expect(after?.version).toBe(row.version + 1);
  });

  it('late evidence settles a quarantined row; the recorded row keeps no address', async () => {
    // Prepare: the deadline passed without events, so the reconciler quarantined the row
    const { row, transports } = await unknownEmail('ev-late');
    clock.advance(16 * 60_000);
    await reconcilerFor(h.ledger, transports, clock).runAll();
    expect((await h.ledger.get(row.pk))?.state).toBe('quarantined');
    // Act
    const result = await recorder.record(
      evidenceOf(sesEvent(row, 'Bounce', 'ses-0003', { bounce: { bounceType: 'Permanent' } })),
    );
    // Assess
    expect(result).toMatchObject({ kind: 'recorded', state: 'rejected' });
    const after = await h.ledger.get(row.pk);
    expect(after?.history.map((e) => e.s).slice(-3)).toEqual(['unknown', 'quarantined', 'rejected']);
    expect(after?.history.at(-1)?.why).toBe('ses:Bounce:Permanent');
    expect(JSON.stringify(after)).not.toContain(MARKERS.email);
  });

  it('an SMS DELIVERED event over SNS settles the unknown SMS row with the provider message id', async () => {
    // Prepare
    const transports = { email: restTransports(sim).email, sms: pushEvidenceOnly(restTransports(sim).sms) };
    sim.addFault({ match: { channel: 'sms' }, fault: 'accept_then_drop', times: 1 });
    const body = JSON.stringify(resetIntent({ eventId: 'ev-sms', channels: ['sms'] }, clock.now()));
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    const row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
    // Act
    const result = await recorder.record(evidenceOf(smsSnsEvent(row, 'DELIVERED', 'sms-77')));
    // Assess
    expect(row.state).toBe('unknown');
    expect(result).toMatchObject({ kind: 'recorded', state: 'accepted' });
    expect(await h.ledger.get(row.pk)).toMatchObject({ state: 'accepted', providerMessageId: 'sms-77' });
  });

  it('an event without our key is ignored, and one whose key no claim carries is unmatched', async () => {
    // Prepare
    const foreign = {
      source: 'aws.ses',
      detail: { eventType: 'Delivery', mail: { messageId: 'x', tags: {} } },
    };
    // Act
    const parsed = parseLambdaEvent(foreign);
    const noRow = await recorder.record(evidenceOf(sesEvent('0'.repeat(64), 'Delivery', 'ses-0004')));
    // Assess
    expect(parsed).toEqual([{ kind: 'ignored', source: 'ses', reason: 'no_sendproof_key' }]);
    expect(noRow.kind).toBe('unmatched');
  });

  it("an unknown row's key and its unkeyed hash, forged on an SES event, are refused: only our sealed label speaks for a row", async () => {
    // Prepare: a real unknown row; the event carries what the labels were before they were sealed (the
    // SHA-256 of the guessable key, and the key as base64url), and says the message bounced
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const intent = resetIntent(
      { eventId: 'ev-label-forged', recipient: { ref: 'player-label', email: MARKERS.email } },
      clock.now(),
    );
    const first = await h.dispatcher({ transports }).handle(JSON.stringify(intent), envelope());
    const row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
    const event = sesEvent(row, 'Bounce', 'ses-0006', {
      bounce: { bounceType: 'Permanent', bounceSubType: 'General' },
    });
    event.detail.mail.tags = {
      'sendproof-purpose': ['password-reset'],
      'sendproof-key': [row.idempotencyKey],
      'sendproof-row': [Buffer.from(row.pk, 'utf8').toString('base64url')],
    };
    // Act
    const result = await recorder.record(evidenceOf(event));
    // Assess: refused before anything is written; the row stays unknown for the reconciler
    expect(row.state).toBe('unknown');
    expect(result).toMatchObject({ kind: 'refused', reason: 'label_unauthenticated' });
    expect(await h.ledger.get(row.pk)).toMatchObject({ state: 'unknown', version: row.version });
    expect(await h.suppressions.isSuppressed(row.tenant, row.recipientRef, 'email')).toMatchObject({
      suppressed: false,
    });
  });

  it('a key too long for its label to carry: the claim wrote the pointer, and the label (sealing the hash) settles the row', async () => {
    // Prepare: identifiers at their limit; the provider answer is lost, so the row is unknown
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const intent = resetIntent(
      { eventId: `long-${'x'.repeat(123)}`, recipient: { ref: `r${'y'.repeat(127)}`, email: MARKERS.email } },
      clock.now(),
    );
    const first = await h.dispatcher({ transports }).handle(JSON.stringify(intent), envelope());
    const row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
    const sent = sim.messages().find((m) => m.idempotencyKey === row.idempotencyKey);
    // Act
    const result = await recorder.record(evidenceOf(sesEvent(row, 'Send', 'ses-0007')));
    // Assess
    expect(row.state).toBe('unknown');
    expect(labelCarriesKey(row.pk)).toBe(false);
    expect(sent?.body.tags).toEqual({ 'sendproof-key': labelOf(row) });
    expect(result).toMatchObject({ kind: 'recorded', state: 'accepted', consumedReadUnits: 1 });
  });
});

describe('fallback continuation', () => {
  it('email unknown, then rejected by evidence: the flow advances, the sweep resumes the sealed intent and exactly one SMS is sent', async () => {
    // Prepare: the email provider accepts, the answer is lost; the fallback intent is parked
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'ev-fallback', attachments: [pdfAttachment()] }),
    );
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    const email = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices, { transports });
    const quiet = await sweeper.sweep();
    // Act: the evidence settles the email; no queue message exists any more, the sweep owns the rest
    const result = await recorder.record(
      evidenceOf(sesEvent(email, 'Bounce', 'ses-0005', { bounce: { bounceType: 'Permanent' } })),
    );
    const swept = await sweeper.sweep();
    const [resumed] = await notices.deliver(h.dispatcher({ transports }));
    const again = await h.dispatcher({ transports }).handle(body, envelope());
    // Assess
    expect(first).toMatchObject({
      disposition: 'done',
      channels: [{ channel: 'email', state: 'unknown', action: 'waiting_for_active_channel' }],
    });
    expect(quiet.resumed).toBe(0);
    expect(result).toMatchObject({ kind: 'recorded', state: 'rejected', fallbackAdvanced: true });
    expect(swept).toMatchObject({ seals: 1, resumed: 1 });
    expect(resumed).toMatchObject({
      disposition: 'done',
      channels: [{ channel: 'sms', state: 'accepted', action: 'sent' }],
    });
    expect(again.channels[0]).toMatchObject({ channel: 'sms', action: 'already_final' });
    const sms = sim.requests().filter((r) => r.channel === 'sms' && r.outcome === 'accepted');
    expect(sms).toHaveLength(1);
    expect(sim.requests().filter((r) => r.channel === 'email')).toHaveLength(1);
  });
});
