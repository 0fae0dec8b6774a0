import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PurposeRegistry, retentionTtl } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore, MAX_EVENTS_PER_KEY } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { type ProviderEvidence, parseLambdaEvent } from '../../../lib/evidence/events.js';
import { expandFact } from '../../../lib/evidence/facts.js';
import { authenticateEvidence } from '../../../lib/evidence/labelAuth.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { evidenceItemKey } from '../../../lib/ledger/tableDefinition.js';
import { Reconciler } from '../../../lib/reconcile/Reconciler.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import {
  crashAt,
  createHarness,
  type Harness,
  pdfAttachment,
  restTransports,
} from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { type Echoed, labelOf, sesTags, smsContext, testLabelKeys } from '../../support/evidenceLabels.js';
import { healthReportIntent, MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { pushEvidenceOnly, RecordingMetrics } from './support.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1.
let sim: RunningProviderSimulator;
let h: Harness;
let store: DynamoEvidenceStore;
let recorder: EvidenceRecorder;
let metrics: RecordingMetrics;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}` });

const sesEvent = (
  key: Echoed,
  eventType: string,
  messageId: string,
  extra: Record<string, unknown> = {},
) => ({
  source: 'aws.ses',
  'detail-type': 'Email Delivered',
  detail: {
    eventType,
    mail: {
      timestamp: new Date(clock.now()).toISOString(),
      messageId,
      destination: [MARKERS.email],
      tags: sesTags(key),
    },
    ...extra,
  },
});

const evidenceOf = (event: unknown): ProviderEvidence => {
  const [parsed] = parseLambdaEvent(event);
  if (parsed?.kind !== 'evidence') throw new Error(`not evidence: ${JSON.stringify(parsed)}`);
  return parsed.evidence;
};

const permanentBounce = (key: Echoed, messageId: string) =>
  evidenceOf(
    sesEvent(key, 'Bounce', messageId, {
      bounce: {
        bounceType: 'Permanent',
        bounceSubType: 'General',
        feedbackId: `fb-${messageId}`,
        timestamp: new Date(clock.now()).toISOString(),
        bouncedRecipients: [{ emailAddress: MARKERS.email }],
      },
    }),
  );

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
  store = new DynamoEvidenceStore(localDynamo().doc, h.table);
});
afterAll(async () => {
  await sim.stop();
});
beforeEach(() => {
  sim.reset();
  clock.set(Date.now());
  metrics = new RecordingMetrics();
  recorder = new EvidenceRecorder({
    labels: testLabelKeys,
    ledger: h.ledger,
    store,
    suppressions: h.suppressions,
    purposes: new PurposeRegistry(),
    clock,
    metrics,
  });
});

describe('evidence that arrives before the row is unknown', () => {
  it('an SES Delivery recorded while dispatching, then a crash: the row settles accepted the moment it becomes unknown', async () => {
    // Prepare: the worker crashes after the provider took the email; SES reports it meanwhile
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(resetIntent({ eventId: 'early-crash' }, clock.now()));
    await expect(
      h.dispatcher({ transports, probe: crashAt('after_provider') }).handle(body, envelope()),
    ).rejects.toThrow('crashed at after_provider');
    const sent = sim.requests().find((r) => r.outcome === 'accepted')!;
    const dispatching = (await h.queries.findByEvent('early-crash'))[0]!;
    const early = await recorder.record(evidenceOf(sesEvent(dispatching, 'Delivery', 'ses-e1')));
    clock.advance(61_000);
    // Act: the message comes back; the expired lease makes the row unknown
    const redelivery = await h.dispatcher({ transports, evidence: recorder }).handle(body, envelope());
    // Assess
    expect(dispatching.state).toBe('dispatching');
    expect(early).toMatchObject({ kind: 'kept', state: 'dispatching' });
    expect(redelivery.channels[0]).toMatchObject({
      state: 'accepted',
      action: 'settled_by_recorded_evidence',
    });
    const row = (await h.ledger.get(dispatching.pk))!;
    expect(row.history.map((e) => e.s)).toEqual(['dispatching', 'unknown', 'accepted']);
    expect(row).toMatchObject({ providerMessageId: 'ses-e1', evidenceIds: ['ses:ses-e1:Delivery'] });
    expect(row.delivery).toMatchObject({ status: 'delivered' });
    // Nothing was sent twice.
    expect(sim.requests().filter((r) => r.outcome === 'accepted')).toEqual([sent]);
  });

  it('recorded during dispatching, then an ambiguous answer: the dispatcher settles the row instead of leaving it unknown', async () => {
    // Prepare: the provider accepts, the answer is lost; SES's Send event is recorded in between
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const body = JSON.stringify(resetIntent({ eventId: 'early-ambiguous' }, clock.now()));
    let kept: unknown;
    const probe = async (edge: string, ctx: { dedupeKey: string }) => {
      if (edge !== 'after_provider') return;
      const row = (await h.ledger.get(ctx.dedupeKey))!;
      kept = await recorder.record(evidenceOf(sesEvent(row, 'Send', 'ses-e2')));
    };
    // Act
    const out = await h.dispatcher({ transports, probe, evidence: recorder }).handle(body, envelope());
    // Assess
    expect(kept).toMatchObject({ kind: 'kept', state: 'dispatching' });
    expect(out.channels[0]).toMatchObject({ state: 'accepted', action: 'settled_by_recorded_evidence' });
    const row = (await h.ledger.get(out.channels[0]!.dedupeKey))!;
    expect(row.history.map((e) => e.s)).toEqual(['dispatching', 'unknown', 'accepted']);
    expect(row.history.at(-1)).toMatchObject({ by: 'evidence:ses', why: 'ses:Send' });
  });

  it('a permanent bounce that beats the accepted write (recorded between the provider call and it) is applied by that write: the fact on the row, the recipient suppressed, the fallback moved on', async () => {
    // Prepare: a health report (email, then SMS on a definitive failure); SES's Bounce is recorded while
    // the row is still `dispatching`, before the dispatcher writes the provider's `accepted`
    const transports = restTransports(sim);
    const recipient = { ref: 'patient-fast-bounce', email: MARKERS.email, phone: MARKERS.phone };
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'fast-bounce', recipient, attachments: [pdfAttachment()] }),
    );
    let kept: unknown;
    const probe = async (edge: string, ctx: { dedupeKey: string }) => {
      if (edge !== 'after_provider' || !ctx.dedupeKey.endsWith(':email')) return;
      const row = (await h.ledger.get(ctx.dedupeKey))!;
      const messageId = sim.requests().find((r) => r.channel === 'email' && r.outcome === 'accepted')!
        .messageId!;
      kept = await recorder.record(permanentBounce(row, messageId));
    };
    // Act: the first dispatch ends with the email accepted; the intent comes back (the sweep, a redelivery)
    const first = await h.dispatcher({ transports, probe, evidence: recorder }).handle(body, envelope());
    const next = await h.dispatcher({ transports, evidence: recorder }).handle(body, envelope());
    // Assess
    expect(kept).toMatchObject({ kind: 'kept', state: 'dispatching' });
    expect(first.channels[0]).toMatchObject({ channel: 'email', state: 'accepted' });
    const row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
    expect(row.state).toBe('accepted');
    expect(row.delivery?.status).toBe('bounced_permanent');
    expect(await h.suppressions.isSuppressed(row.tenant, row.recipientRef, 'email')).toMatchObject({
      suppressed: true,
    });
    expect(next.channels.at(-1)).toMatchObject({ channel: 'sms', state: 'accepted', action: 'sent' });
    expect(smsSent()).toHaveLength(1);
  });

  it('the reconciler applies recorded evidence before it would quarantine', async () => {
    // Prepare: crash while dispatching, a Bounce is recorded, then nobody redelivers for hours
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(resetIntent({ eventId: 'early-reconcile' }, clock.now()));
    await expect(
      h.dispatcher({ transports, probe: crashAt('after_provider') }).handle(body, envelope()),
    ).rejects.toThrow();
    const dispatching = (await h.queries.findByEvent('early-reconcile'))[0]!;
    await recorder.record(permanentBounce(dispatching, 'ses-e3'));
    clock.advance(3 * 3600_000);
    const reconciler = new Reconciler({
      ledger: h.ledger,
      transports,
      purposes: new PurposeRegistry(),
      clock,
      runId: 'test',
      evidence: recorder,
    });
    // Act
    const outcome = await reconciler.resolveRow(dispatching);
    // Assess
    expect(outcome).toMatchObject({ action: 'resolved_by_evidence', state: 'rejected' });
    const row = (await h.ledger.get(dispatching.pk))!;
    expect(row.history.map((e) => e.s)).toEqual(['dispatching', 'unknown', 'rejected']);
    expect(row.history.some((e) => e.s === 'quarantined')).toBe(false);
  });
});

/** Sends the health report's email (accepted by the simulator) and returns the email row. */
const acceptedHealthReport = async (eventId: string) => {
  const transports = restTransports(sim);
  // Each test its own recipient: a bounce in one suppresses that recipient for the rest of the file.
  const recipient = { ref: `patient-${eventId}`, email: MARKERS.email, phone: MARKERS.phone };
  const body = JSON.stringify(healthReportIntent({ eventId, recipient, attachments: [pdfAttachment()] }));
  const first = await h.dispatcher({ transports }).handle(body, envelope());
  expect(first).toMatchObject({ disposition: 'done', channels: [{ channel: 'email', state: 'accepted' }] });
  const email = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
  return { email, body, transports };
};

const smsSent = () => sim.requests().filter((r) => r.channel === 'sms' && r.outcome === 'accepted');

describe('post-acceptance evidence', () => {
  it('a permanent bounce after accepted: recorded on the row, suppresses the recipient, and the fallback sends exactly one SMS', async () => {
    // Prepare
    const { email, body, transports } = await acceptedHealthReport('bounce-hard');
    // Act
    const result = await recorder.record(permanentBounce(email, email.providerMessageId!));
    // The sweep (or any redelivery of the intent) dispatches whichever channel the pointer names, twice.
    const next = await h.dispatcher({ transports }).handle(body, envelope());
    const again = await h.dispatcher({ transports }).handle(body, envelope());
    // Assess
    expect(result).toMatchObject({
      kind: 'fact_recorded',
      state: 'accepted',
      fallbackAdvanced: true,
      suppressed: true,
    });
    const row = (await h.ledger.get(email.pk))!;
    expect(row.state).toBe('accepted');
    expect(row.version).toBe(email.version);
    expect(row.delivery).toMatchObject({
      status: 'bounced_permanent',
      why: 'ses:Bounce:Permanent/General',
      // Stored compact: the id relative to the row's message id, the actor its source (facts.ts).
      h: [{ f: 'bounced_permanent', id: 'ses:~:Bounce' }],
    });
    expect(expandFact(row.delivery!.h[0]!, row.providerMessageId)).toMatchObject({
      by: 'evidence:ses',
      id: `ses:${email.providerMessageId}:Bounce`,
      msg: email.providerMessageId,
    });
    expect(await h.suppressions.isSuppressed(row.tenant, row.recipientRef, 'email')).toMatchObject({
      suppressed: true,
    });
    const [entry] = (await h.suppressions.list(row.tenant)).filter(
      (e) => e.recipientRef === row.recipientRef,
    );
    expect(entry).toMatchObject({
      channel: 'email',
      source: `ses:${email.providerMessageId}:Bounce`,
      by: 'evidence:ses',
    });
    expect(next.channels.at(-1)).toMatchObject({ channel: 'sms', state: 'accepted', action: 'sent' });
    expect(again.channels.at(-1)).toMatchObject({ channel: 'sms', action: 'already_final' });
    expect(smsSent()).toHaveLength(1);
    expect(JSON.stringify(row)).not.toContain(MARKERS.email);
    expect(metrics.counts).toContainEqual({
      name: 'DeliveryFacts',
      value: 1,
      dimensions: { fact: 'bounced_permanent', channel: 'email', purpose: 'health-report' },
    });
  });

  it('a transient bounce is recorded and does nothing else: no suppression, no fallback, no SMS', async () => {
    // Prepare
    const { email, body, transports } = await acceptedHealthReport('bounce-soft');
    const soft = evidenceOf(
      sesEvent(email, 'Bounce', email.providerMessageId!, {
        bounce: { bounceType: 'Transient', bounceSubType: 'MailboxFull' },
      }),
    );
    // Act
    const result = await recorder.record(soft);
    const next = await h.dispatcher({ transports }).handle(body, envelope());
    // Assess
    expect(result).toMatchObject({ kind: 'fact_recorded', fallbackAdvanced: false, suppressed: false });
    expect((await h.ledger.get(email.pk))?.delivery?.status).toBe('bounced_transient');
    expect(await h.suppressions.isSuppressed(email.tenant, email.recipientRef, 'email')).toEqual({
      suppressed: false,
    });
    expect(next.channels).toEqual([expect.objectContaining({ channel: 'email', action: 'already_final' })]);
    expect(smsSent()).toHaveLength(0);
  });

  it('the same events delivered twice and out of order change the row once each; a late delay never hides the delivery', async () => {
    // Prepare
    const { email } = await acceptedHealthReport('out-of-order');
    const id = email.providerMessageId!;
    const t0 = clock.now();
    const delivery = evidenceOf(
      sesEvent(email, 'Delivery', id, {
        delivery: { timestamp: new Date(t0 + 5_000).toISOString() },
      }),
    );
    const delay = evidenceOf(
      sesEvent(email, 'DeliveryDelay', id, {
        deliveryDelay: { timestamp: new Date(t0 + 1_000).toISOString() },
      }),
    );
    // Act: the delivery first, the earlier delay after it, then both again
    const results = [];
    for (const e of [delivery, delay, delivery, delay]) results.push(await recorder.record(e));
    // Assess
    expect(results.map((r) => r.kind)).toEqual(['fact_recorded', 'fact_recorded', 'duplicate', 'duplicate']);
    const row = (await h.ledger.get(email.pk))!;
    expect(row.delivery?.status).toBe('delivered');
    expect(row.delivery?.h.map((e) => e.f)).toEqual(['delivered', 'delayed']);
    expect(row.delivery?.h.map((e) => expandFact(e, id).id)).toEqual([
      `ses:${id}:Delivery`,
      `ses:${id}:DeliveryDelay`,
    ]);
    expect(row.evidenceIds).toBeUndefined();
    expect(row.version).toBe(email.version);
    // Events for an accepted row named by its label go straight to the row: no evidence item.
    const kept = await store.eventsFor(email.idempotencyKey);
    expect(kept.events).toEqual([]);
  });

  it('an SMS TTL expiry on the accepted text is definitive; TEXT_UNKNOWN is not', async () => {
    // Prepare: an SMS-first flow (email fallback) whose SMS was accepted
    const transports = restTransports(sim);
    const body = JSON.stringify(
      healthReportIntent({
        eventId: 'sms-ttl',
        recipient: { ref: 'patient-sms-ttl', email: MARKERS.email, phone: MARKERS.phone },
        channels: ['sms', 'email'],
        attachments: [pdfAttachment()],
      }),
    );
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    const sms = (await h.ledger.get(first.channels[0]!.dedupeKey)) as DeliveryRecord;
    const smsEvent = (status: string) =>
      evidenceOf({
        Records: [
          {
            Sns: {
              Message: JSON.stringify({
                eventType: `TEXT_${status}`,
                messageStatus: status,
                isFinal: true,
                messageId: sms.providerMessageId,
                destinationPhoneNumber: MARKERS.phone,
                context: smsContext(sms),
              }),
            },
          },
        ],
      });
    // Act
    const unknown = await recorder.record(smsEvent('UNKNOWN'));
    const expired = await recorder.record(smsEvent('TTL_EXPIRED'));
    // Assess
    expect(unknown).toMatchObject({ kind: 'fact_recorded', fallbackAdvanced: false });
    expect(expired).toMatchObject({ kind: 'fact_recorded', fallbackAdvanced: true, suppressed: false });
    expect((await h.ledger.get(sms.pk))?.delivery?.status).toBe('ttl_expired');
  });

  it('a purpose with fallbackOn: [] records the bounce but never moves the flow', async () => {
    // Prepare
    const { email } = await acceptedHealthReport('fallback-off');
    const strict = new EvidenceRecorder({
      labels: testLabelKeys,
      ledger: h.ledger,
      store,
      purposes: PurposeRegistry.withOverrides([
        { ...new PurposeRegistry().get('health-report'), fallbackOn: [] },
      ]),
      clock,
    });
    // Act
    const result = await strict.record(permanentBounce(email, email.providerMessageId!));
    // Assess
    expect(result).toMatchObject({ kind: 'fact_recorded', fallbackAdvanced: false });
    expect((await h.ledger.getFlow(email.logicalKey))?.activeIndex).toBe(0);
  });
});

describe('the evidence item of a key is bounded and expires with its row (issue 26 item 7)', () => {
  const itemOf = async (idempotencyKey: string) =>
    (
      await localDynamo().doc.send(
        new GetCommand({
          TableName: h.table,
          Key: { pk: evidenceItemKey(idempotencyKey) },
          ConsistentRead: true,
        }),
      )
    ).Item;

  it('an event kept for a row without an outcome gives the item the row’s retention as its TTL, and the item stops growing at its cap without failing', async () => {
    // Prepare: a row left dispatching (the worker crashed after the provider took the email)
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(
      resetIntent(
        { eventId: 'ev-ttl', recipient: { ref: 'player-ev-ttl', email: MARKERS.email } },
        clock.now(),
      ),
    );
    await expect(
      h.dispatcher({ transports, probe: crashAt('after_provider') }).handle(body, envelope()),
    ).rejects.toThrow();
    const dispatching = (await h.queries.findByEvent('ev-ttl'))[0]!;
    const policy = new PurposeRegistry().find(dispatching.purpose)!;
    // Act: more distinct events than an item keeps (a retry storm of soft bounces, each its own id)
    const results = [];
    for (let i = 0; i < MAX_EVENTS_PER_KEY + 3; i++)
      results.push(
        await recorder.record(
          evidenceOf(
            sesEvent(dispatching, 'Bounce', `ses-ttl-${i}`, {
              bounce: { bounceType: 'Transient', bounceSubType: 'General' },
            }),
          ),
        ),
      );
    // Assess
    expect(results.every((r) => r.kind === 'kept')).toBe(true);
    const item = (await itemOf(dispatching.idempotencyKey))!;
    expect(item.ttl).toBe(retentionTtl(policy, clock.now()));
    expect(item.eventIds).toHaveLength(MAX_EVENTS_PER_KEY);
    expect(item.events).toHaveLength(MAX_EVENTS_PER_KEY);
    // ... and each event it could not keep is counted, not only logged
    expect(metrics.counts.filter((c) => c.name === 'EvidenceNotKept')).toEqual(
      Array.from({ length: 3 }, () => ({ name: 'EvidenceNotKept', value: 1, dimensions: { source: 'ses' } })),
    );
  });

  it('opens and clicks are recorded once per message, on the row and in the item', async () => {
    // Prepare: an accepted email; the provider reports two opens and a click, each with its own event id
    const { email } = await acceptedHealthReport('engaged-once');
    const engaged = (id: string): ProviderEvidence => ({
      source: 'sendgrid',
      evidenceId: `sendgrid:${id}`,
      label: labelOf(email),
      fact: 'engaged',
      outcome: 'accepted',
      providerMessageId: email.providerMessageId!,
      why: 'sendgrid:open',
    });
    // Act
    const results = [];
    for (const id of ['open-1', 'open-2', 'click-1']) results.push((await recorder.record(engaged(id))).kind);
    // Assess
    expect(results).toEqual(['fact_recorded', 'redundant', 'redundant']);
    const row = (await h.ledger.get(email.pk))!;
    expect(row.delivery?.h.filter((f) => f.f === 'engaged')).toHaveLength(1);
  });

  it('a key reused after its row expired: events recorded before the new row was claimed never settle it', async () => {
    // Prepare: an event recorded for the key a day before (its row has since expired), then the same key
    // claimed again and its answer lost
    const eventId = 'reused-key';
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const body = JSON.stringify(
      resetIntent({ eventId, recipient: { ref: 'player-reused-key', email: MARKERS.email } }, clock.now()),
    );
    const out = await h.dispatcher({ transports: restTransports(sim) }).handle(body, envelope());
    const unknown = (await h.ledger.get(out.channels[0]!.dedupeKey))!;
    expect(unknown.state).toBe('unknown');
    const old = authenticateEvidence(
      evidenceOf(sesEvent(unknown, 'Delivery', 'ses-old-message')),
      await testLabelKeys(),
    );
    if (!old.ok) throw new Error(`label refused: ${old.reason}`);
    await store.append(old.evidence, unknown.createdAt - 86_400_000);
    // Act
    const settled = await recorder.applyRecordedEvidence(unknown);
    // Assess
    expect(settled).toBeUndefined();
    const row = (await h.ledger.get(unknown.pk))!;
    expect(row.state).toBe('unknown');
    expect(row.providerMessageId).toBeUndefined();
  });
});
