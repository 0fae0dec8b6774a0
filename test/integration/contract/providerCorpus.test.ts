import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sesClient, smsV2Client } from '../../../lib/aws/messagingClients.js';
import { transportHoldsReadModel } from '../../../lib/console/holdsPanel.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { type ParsedEvent, parseLambdaEvent } from '../../../lib/evidence/events.js';
import { applyOptSignal } from '../../../lib/evidence/optSignals.js';
import { verifyWebhook } from '../../../lib/evidence/webhooks.js';
import { NUMBER_TENANT, numberRefOf } from '../../../lib/ledger/optOut.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { TransportHolds } from '../../../lib/rate/TransportHolds.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import {
  generateSigningKeys,
  type SigningKeys,
  signResend,
  signSendGrid,
  signTwilio,
} from '../../../lib/simulator/webhookSigners.js';
import type { Transport } from '../../../lib/transports/port.js';
import { ResendTransport } from '../../../lib/transports/ResendTransport.js';
import { SendGridTransport } from '../../../lib/transports/SendGridTransport.js';
import { SesTransport } from '../../../lib/transports/SesTransport.js';
import { SmsV2Transport } from '../../../lib/transports/SmsV2Transport.js';
import { TwilioTransport } from '../../../lib/transports/TwilioTransport.js';
import { type CorpusCase, loadCorpus } from '../../contract/providers/corpus.js';
import {
  CONTENT_KEY,
  createHarness,
  type Harness,
  pdfAttachment,
  restTransports,
} from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { labelOf, testLabelKeys } from '../../support/evidenceLabels.js';
import { emailMessage, keyFor, smsMessage } from '../../support/fakes/outbound.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';
import { healthReportIntent, receiptIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { pushEvidenceOnly } from '../reconcile/support.js';

/**
 * Issue 25: the providers' documented payloads and error answers are the contract. Every case in
 * test/contract/providers/ runs through the real code: an event through the real parser (the signed
 * webhooks through the vendors' own verifiers) and the real recorder on DynamoDB Local, once against an
 * accepted row of a fallback purpose (the fact, the suppression, the fallback) and once against an
 * `unknown` row (what it settles to); an inbound reply through the parser (its signal); an error
 * answer through the real adapter against a loopback fake that answers exactly the documented bytes.
 */
const corpus = loadCorpus();
type MessageCase = Extract<CorpusCase, { kind: 'event' | 'inbound' }>;
type ErrorCase = Extract<CorpusCase, { kind: 'error' }>;
type EvidenceExpected = Extract<MessageCase['expected'], { result: 'evidence' }>;
type IgnoredExpected = Extract<MessageCase['expected'], { result: 'ignored' }>;
const messageCases = corpus.filter((c): c is MessageCase => c.kind !== 'error');
const evidenceCases = messageCases.flatMap((c) =>
  c.expected.result === 'evidence' ? [{ c, expected: c.expected as EvidenceExpected }] : [],
);
const ignoredCases = messageCases.flatMap((c) =>
  c.expected.result === 'ignored' ? [{ c, expected: c.expected as IgnoredExpected }] : [],
);
const errorCases = corpus.filter((c): c is ErrorCase => c.kind === 'error');
const clock = new ManualClock(Date.now());
const WEBHOOK_BASE = 'https://evidence.example';
let sim: RunningProviderSimulator;
let h: Harness;
let recorder: EvidenceRecorder;
let keys: SigningKeys;
let fake: ScriptedHttpServer;
let attachment: ReturnType<typeof pdfAttachment>;
let seq = 0;

const EMAIL_PROVIDERS = new Set(['ses', 'resend', 'sendgrid']);

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
  keys = generateSigningKeys();
  fake = await ScriptedHttpServer.start();
  attachment = pdfAttachment();
});
afterAll(async () => {
  await fake.stop();
  await sim.stop();
});

/** A row of a fallback purpose (health-report), first channel the case's: accepted, or unknown (the answer lost). */
const rowFor = async (c: MessageCase, state: 'accepted' | 'unknown'): Promise<DeliveryRecord> => {
  const email = EMAIL_PROVIDERS.has(c.provider);
  const n = ++seq;
  const transports = {
    email: pushEvidenceOnly(restTransports(sim).email),
    sms: pushEvidenceOnly(restTransports(sim).sms),
  };
  if (state === 'unknown')
    sim.addFault({ match: { channel: email ? 'email' : 'sms' }, fault: 'accept_then_drop', times: 1 });
  const intent = healthReportIntent({
    eventId: `corpus-${n}`,
    recipient: { ref: `corpus-recipient-${n}`, email: 'corpus@example.com', phone: '+15555550199' },
    channels: email ? ['email', 'sms'] : ['sms', 'email'],
    attachments: [attachment],
  });
  const outcome = await h.dispatcher({ transports }).handle(JSON.stringify(intent), { messageId: `m-${n}` });
  const row = (await h.ledger.get(outcome.channels[0]!.dedupeKey))!;
  expect(row.state).toBe(state);
  const documentedId = c.expected.result === 'evidence' ? c.expected.providerMessageId : undefined;
  if (state === 'unknown' || !documentedId) return row;
  // A provider reports on the message it accepted: the accepted row holds the id the documented event
  // names, as the send's answer would have given it (the simulator answered with an id of its own).
  await localDynamo().doc.send(
    new UpdateCommand({
      TableName: h.table,
      Key: { pk: row.pk },
      UpdateExpression: 'SET providerMessageId = :id',
      ExpressionAttributeValues: { ':id': documentedId },
    }),
  );
  return (await h.ledger.get(row.pk))!;
};

type Json = Record<string, unknown>;
const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** Puts our label where the provider documents it echoes a message's tags (lib/transports/labels.ts). */
const echoed = (c: MessageCase, row: DeliveryRecord | undefined): Json => {
  const payload = clone(c.payload) as Json;
  if (!row || !c.echo) return payload;
  const label = labelOf(row);
  if (c.provider === 'ses') {
    const mail = ((payload.detail as Json | undefined)?.mail ?? payload.mail) as Json;
    mail.tags = {
      ...(mail.tags as Json),
      'sendproof-key': [label],
    };
  }
  if (c.provider === 'sms-v2') {
    const event = ((payload.detail as Json | undefined) ?? payload) as Json;
    event.context = {
      ...(event.context as Json),
      'sendproof-key': label,
    };
  }
  if (c.provider === 'resend') {
    const data = payload.data as Json;
    data.tags = {
      ...(data.tags as Json),
      'sendproof-key': label,
    };
  }
  if (c.provider === 'sendgrid') Object.assign(payload, { sendproof_key: label });
  return payload;
};

const EB_DETAIL_TYPES: Readonly<Record<string, string>> = {
  Send: 'Email Sent',
  Delivery: 'Email Delivered',
  Bounce: 'Email Bounced',
  Complaint: 'Email Complaint Received',
  Reject: 'Email Rejected',
  'Rendering Failure': 'Email Rendering Failed',
  DeliveryDelay: 'Email Delivery Delayed',
  Open: 'Email Opened',
  Click: 'Email Clicked',
  Subscription: 'Email Subscribed',
};

/** Through the real entry: the evidence Lambda's envelopes, or the signed webhook and the vendor's verifier. */
const parse = async (c: MessageCase, row?: DeliveryRecord): Promise<ParsedEvent> => {
  const payload = echoed(c, row);
  if (c.provider === 'ses' || c.provider === 'sms-v2') {
    const event =
      c.envelope === 'sns'
        ? {
            Records: [
              {
                EventSource: 'aws:sns',
                Sns: { MessageId: `sns-${++seq}`, Message: JSON.stringify(payload) },
              },
            ],
          }
        : c.envelope === 'eventbridge'
          ? {
              version: '0',
              id: `eb-${++seq}`,
              'detail-type': EB_DETAIL_TYPES[String(payload.eventType)] ?? 'Email Event',
              source: 'aws.ses',
              account: '123456789012',
              time: new Date(clock.now()).toISOString(),
              region: 'us-east-1',
              resources: [],
              detail: payload,
            }
          : payload;
    const events = parseLambdaEvent(event);
    expect(events).toHaveLength(1);
    return events[0]!;
  }
  const now = clock.now();
  let verdict: Awaited<ReturnType<typeof verifyWebhook>>;
  if (c.provider === 'resend') {
    const signed = signResend(keys, payload, new Date(now));
    verdict = await verifyWebhook(
      { provider: 'resend', url: `${WEBHOOK_BASE}/resend`, headers: signed.headers, body: signed.body },
      keys.secrets,
      now,
    );
  } else if (c.provider === 'sendgrid') {
    const signed = signSendGrid(keys, [payload], new Date(now));
    verdict = await verifyWebhook(
      { provider: 'sendgrid', url: `${WEBHOOK_BASE}/sendgrid`, headers: signed.headers, body: signed.body },
      keys.secrets,
      now,
    );
  } else {
    const query = row && c.echo ? `?k=${labelOf(row)}` : '';
    const url = `${WEBHOOK_BASE}/twilio${query}`;
    const signed = signTwilio(keys, url, payload as Record<string, string>);
    verdict = await verifyWebhook(
      { provider: 'twilio', url, headers: signed.headers, body: signed.body },
      keys.secrets,
      now,
    );
  }
  if (!verdict.ok) throw new Error(`webhook refused: ${verdict.reason}`);
  expect(verdict.events).toHaveLength(1);
  return verdict.events[0]!;
};

/** The adapter of the case's provider, pointed at the loopback fake. */
const adapterFor = (c: ErrorCase): { transport: Transport; channel: 'email' | 'sms' } => {
  switch (c.provider) {
    case 'ses':
      return {
        transport: new SesTransport({
          client: sesClient({ region: 'us-east-1', endpoint: fake.url }),
          from: 'receipts@sendproof.test',
          timeoutMs: 2_000,
          clock,
        }),
        channel: 'email',
      };
    case 'sms-v2':
      return {
        transport: new SmsV2Transport({
          client: smsV2Client({ region: 'us-east-1', endpoint: fake.url }),
          timeoutMs: 2_000,
          clock,
        }),
        channel: 'sms',
      };
    case 'resend':
      return {
        transport: new ResendTransport({
          baseUrl: fake.url,
          from: 'receipts@sendproof.test',
          apiKey: async () => 're_test_key',
          clock,
        }),
        channel: 'email',
      };
    case 'sendgrid':
      return {
        transport: new SendGridTransport({
          baseUrl: fake.url,
          from: 'receipts@sendproof.test',
          apiKey: async () => 'SG.test',
          clock,
        }),
        channel: 'email',
      };
    case 'twilio':
      return {
        transport: new TwilioTransport({
          baseUrl: fake.url,
          from: '+15017122661',
          credentials: async () => ({
            accountSid: 'ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
            authToken: 'test-auth-token',
          }),
          clock,
        }),
        channel: 'sms',
      };
  }
};

describe('the provider contract corpus (issue 25)', () => {
  it('holds at least 80 documented cases, each with its source and documented meaning, and every provider', () => {
    // Assess
    expect(corpus.length).toBeGreaterThanOrEqual(80);
    expect(new Set(corpus.map((c) => c.provider))).toEqual(
      new Set(['ses', 'sms-v2', 'resend', 'sendgrid', 'twilio']),
    );
    expect(corpus.every((c) => c.source.title && c.documented && c.sendproof)).toBe(true);
  });

  for (const { c, expected } of evidenceCases) {
    it(`${c.id}: ${c.name} is ${expected.fact} on an accepted row and settles an unknown one`, async () => {
      // Prepare
      const accepted = await rowFor(c, 'accepted');
      const unknown = await rowFor(c, 'unknown');

      // Act
      const parsed = await parse(c, accepted);
      const onAccepted = parsed.kind === 'evidence' ? await recorder.record(parsed.evidence) : undefined;
      const again = await parse(c, unknown);
      const onUnknown = again.kind === 'evidence' ? await recorder.record(again.evidence) : undefined;

      // Assess: the parser reads what the provider documents
      expect(parsed).toMatchObject({
        kind: 'evidence',
        evidence: {
          fact: expected.fact,
          why: expected.why,
          providerMessageId: expected.providerMessageId,
          outcome: expected.settlesTo,
        },
      });
      // ... the recorder gives the fact its meaning on an accepted row of a fallback purpose; a `sent` of
      // the message the accepted row already records adds nothing and writes nothing (issue 27)
      if (expected.fact === 'sent') {
        expect(onAccepted).toMatchObject({ kind: 'redundant', state: 'accepted' });
        expect((await h.ledger.get(accepted.pk))?.delivery).toBeUndefined();
      } else {
        expect(onAccepted).toMatchObject({
          kind: 'fact_recorded',
          suppressed: expected.suppresses,
          fallbackAdvanced: expected.unlocksFallback,
        });
        expect((await h.ledger.get(accepted.pk))?.delivery?.status).toBe(expected.fact);
      }
      const suppression = await h.suppressions.isSuppressed(
        accepted.tenant,
        accepted.recipientRef,
        accepted.channel,
      );
      expect(suppression.suppressed).toBe(expected.suppresses);
      if (expected.suppresses) expect(suppression.reason).toMatch(new RegExp(`^${expected.fact}:`));
      // ... and settles an unknown row; a definite non-delivery moves its fallback on
      expect(onUnknown).toMatchObject({
        kind: 'recorded',
        state: expected.settlesTo,
        fallbackAdvanced: expected.settlesTo === 'rejected',
      });
      const settled = await h.ledger.get(unknown.pk);
      if (expected.providerMessageId) expect(settled?.providerMessageId).toBe(expected.providerMessageId);
    });
  }

  for (const { c, expected } of ignoredCases) {
    it(`${c.id}: ${c.name} is not evidence (${expected.reason})`, async () => {
      // Prepare: an accepted row whose labels the event carries, when the provider echoes them
      const row = c.echo && c.kind === 'event' ? await rowFor(c, 'accepted') : undefined;

      // Act
      const parsed = await parse(c, row);

      // Assess
      expect(parsed).toMatchObject({ kind: 'ignored', reason: expected.reason });
      if (parsed.kind !== 'ignored') return;
      if (expected.signal) expect(parsed.signal).toMatchObject(expected.signal);
      else expect(parsed.signal).toBeUndefined();
      if (row) expect((await h.ledger.get(row.pk))?.delivery).toBeUndefined();
    });
  }

  for (const { c, expected } of ignoredCases.filter(
    ({ expected }) => expected.signal?.kind === 'opt_out' || expected.signal?.kind === 'opt_in',
  )) {
    const signal = expected.signal as { kind: 'opt_out' | 'opt_in'; phone: string };
    it(`${c.id}: ${c.name} ${signal.kind === 'opt_out' ? 'suppresses' : 'lifts the opt-out of'} the sender's number on SMS (source provider_opt_out, issue 29)`, async () => {
      // Prepare: for an opt-in, the number opted out before (as a STOP had left it), and an operator's
      // suppression of another channel that the opt-in must not lift
      const phone = signal.phone;
      const number = numberRefOf(phone, CONTENT_KEY);
      const deps = { suppressions: h.suppressions, numberKey: async () => CONTENT_KEY, clock };
      if (signal.kind === 'opt_in') {
        await h.suppressions.suppress(NUMBER_TENANT, number, 'sms', 'opted_out', {
          source: 'provider_opt_out',
          at: clock.now(),
          by: 'provider:earlier-stop',
        });
        await h.suppressions.suppress(NUMBER_TENANT, number, 'email', 'asked', {
          source: 'operator:alice',
          at: clock.now(),
          by: 'operator:alice',
        });
      }
      const parsed = await parse(c);
      if (parsed.kind !== 'ignored' || !parsed.signal) throw new Error('no signal');
      // Cases share documented numbers: only this case's changes count.
      if (signal.kind === 'opt_out')
        await h.suppressions.liftOptOut(NUMBER_TENANT, number, 'sms', {
          source: 'test',
          at: clock.now(),
          by: 'test',
          reason: 'a fresh start',
        });
      const earlier = (await h.suppressions.changes(NUMBER_TENANT, number)).length;

      // Act: what the evidence function (SNS) and the webhook endpoint do with the signal, twice
      const first = await applyOptSignal(parsed.signal, deps);
      const again = await applyOptSignal(parsed.signal, deps);

      // Assess
      const listed = (await h.suppressions.list(NUMBER_TENANT)).filter((e) => e.recipientRef === number);
      const changes = (await h.suppressions.changes(NUMBER_TENANT, number)).slice(earlier);
      expect(JSON.stringify({ listed, changes })).not.toContain(phone.slice(1));
      if (signal.kind === 'opt_out') {
        expect([first, again]).toEqual(['opted_out', 'opted_out']);
        expect(listed.filter((e) => e.channel === 'sms')).toMatchObject([
          { reason: 'opted_out', source: 'provider_opt_out' },
        ]);
        expect(changes.filter((ch) => ch.op === 'add')).toHaveLength(1);
        // ... and a later intent to that number stops at the gate, without a provider call
        const before = sim.requests().length;
        const intent = resetIntent({
          eventId: `after-${c.id.replace('/', '-')}`,
          channels: ['sms'],
          recipient: { ref: `someone-${++seq}`, phone },
        });
        const outcome = await h.dispatcher().handle(JSON.stringify(intent), { messageId: `m-${seq}` });
        expect(outcome, JSON.stringify(outcome)).toMatchObject({ channels: [{ state: 'suppressed' }] });
        expect(sim.requests().length).toBe(before);
      } else {
        expect([first, again]).toEqual(['opted_in', 'opt_in_without_opt_out']);
        expect(listed).toMatchObject([{ channel: 'email', source: 'operator:alice' }]);
        expect(await h.suppressions.isSuppressed(NUMBER_TENANT, number, 'sms')).toEqual({
          suppressed: false,
        });
      }
    });
  }

  for (const c of errorCases.filter((e) => e.expected.cause === 'opted_out')) {
    it(`${c.id}: through the dispatcher, the row ends suppressed (opted_out) and the recipient is suppressed on SMS with source provider_opt_out (issue 29)`, async () => {
      // Prepare: the real adapter, the fake answers the documented bytes once
      const { transport } = adapterFor(c);
      fake.enqueue({ reply: c.payload.status, headers: c.payload.headers, body: c.payload.body });
      const n = ++seq;
      const recipient = { ref: `opted-${n}`, phone: `+1555555${String(n).padStart(4, '0')}` };
      const intent = (id: string) =>
        JSON.stringify(resetIntent({ eventId: `opt-${n}-${id}`, channels: ['sms'], recipient }));
      const transports = { email: h.transports.email, sms: transport };
      const calls = fake.requests.length;

      // Act: the refused send, then a later intent to the same recipient
      const first = await h.dispatcher({ transports }).handle(intent('a'), { messageId: `m-${n}-a` });
      const later = await h.dispatcher({ transports }).handle(intent('b'), { messageId: `m-${n}-b` });

      // Assess
      const row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
      expect(row.state).toBe('suppressed');
      expect(row.history.at(-1)?.why).toBe('opted_out');
      expect(
        (await h.suppressions.list('acme-games')).filter((e) => e.recipientRef === recipient.ref),
      ).toMatchObject([{ channel: 'sms', reason: 'opted_out', source: 'provider_opt_out' }]);
      expect(later.channels[0]).toMatchObject({ state: 'suppressed', action: 'suppressed' });
      expect(fake.requests.length - calls).toBe(1);
      // ... and the number's START (it names only the number) lifts the recipient's entry too
      const started = await applyOptSignal(
        {
          kind: 'opt_in',
          channel: 'sms',
          provider: c.provider === 'twilio' ? 'twilio' : 'sms-v2',
          phone: recipient.phone,
          keyword: 'START',
          evidenceId: `start-${n}`,
        },
        { suppressions: h.suppressions, numberKey: async () => CONTENT_KEY, clock },
      );
      expect(started).toBe('opted_in');
      expect(await h.suppressions.isSuppressed('acme-games', recipient.ref, 'sms')).toEqual({
        suppressed: false,
      });
    });
  }

  for (const c of errorCases) {
    const { kind, cause, hold } = c.expected;
    it(`${c.id}: ${c.name} is ${kind}${cause ? ` (${cause})` : ''}${hold ? ` (hold ${hold})` : ''}`, async () => {
      // Prepare: the fake answers the documented bytes
      const { transport, channel } = adapterFor(c);
      fake.enqueue({ reply: c.payload.status, headers: c.payload.headers, body: c.payload.body });
      const message = channel === 'email' ? emailMessage() : smsMessage();

      // Act
      const result = await transport.send(message, keyFor(c.id));

      // Assess
      expect(result.kind).toBe(c.expected.kind);
      if (result.kind === 'rejected') expect(result.cause).toBe(c.expected.cause);
      if (result.kind === 'retryable') expect(result.hold?.reason).toBe(c.expected.hold);
    });
  }
});

describe('a transport-wide hold (issue 25), on DynamoDB Local with the documented SendingPausedException', () => {
  it('the row and the next rows of the transport wait in retry_wait (transport_hold) with no provider call, no rejection and no fallback; after the hold lifts they send', async () => {
    // Prepare: the real SES adapter against the fake, which answers the documented bytes once
    const paused = errorCases.find((c) => c.id === 'ses/error-sending-paused')!;
    const { transport: ses } = adapterFor(paused);
    const holds = new TransportHolds(localDynamo().doc, h.table, { workerId: 'dispatch:hold-test' });
    const sms = pushEvidenceOnly(restTransports(sim).sms);
    const dispatcher = () => h.dispatcher({ transports: { email: ses, sms }, holds });
    const smsBefore = sim.requests().length;
    fake.enqueue({
      reply: paused.payload.status,
      headers: paused.payload.headers,
      body: paused.payload.body,
    });
    const calls = fake.requests.length;
    const report = JSON.stringify(
      healthReportIntent({
        eventId: 'held-report',
        recipient: { ref: 'held-1', email: 'a@example.com', phone: '+15555550101' },
        attachments: [attachment],
      }),
    );
    const receipts = [2, 3].map((n) =>
      JSON.stringify(
        receiptIntent({
          eventId: `held-receipt-${n}`,
          recipient: { ref: `held-${n}`, email: 'b@example.com' },
        }),
      ),
    );

    // Act: the hold answer, then two more rows of the same transport
    const first = await dispatcher().handle(report, { messageId: 'held-a' });
    const next = [];
    for (const [i, body] of receipts.entries())
      next.push(await dispatcher().handle(body, { messageId: `held-${i}` }));
    const heldView = await holds.read('ses');
    const panel = transportHoldsReadModel(localDynamo().doc, h.table, ['ses', 'rest']);
    const shownWhileHeld = await panel.open();
    const waiting = await Promise.all(
      [first, ...next].map(async (o) => (await h.ledger.get(o.channels[0]!.dedupeKey))!),
    );
    const callsWhileHeld = fake.requests.length - calls;
    // ... the hold's probe time passes: the first row probes (accepted), then the others send
    clock.advance(11 * 60_000);
    fake.enqueue(
      ...[0, 1, 2].map((i) => ({
        reply: 200,
        headers: { 'content-type': 'application/json' },
        body: { MessageId: `0100-held-${i}` },
      })),
    );
    const probe = await dispatcher().handle(report, { messageId: 'held-a2' });
    const lifted = await holds.read('ses');
    const shownAfter = await panel.open();
    const after = [];
    for (const [i, body] of receipts.entries())
      after.push(await dispatcher().handle(body, { messageId: `held-${i}-2` }));

    // Assess
    expect(heldView).toMatchObject({ holdState: 'held', reason: 'sending_paused', version: 1 });
    expect(heldView?.history).toHaveLength(1);
    expect(callsWhileHeld).toBe(1);
    // ... the console's holds panel (and `sendproof stats`, through the same read) shows it while it stands
    expect(shownWhileHeld).toEqual([
      {
        kind: 'transport_hold',
        name: 'ses',
        reason: 'sending_paused',
        since: new Date(heldView!.since).toISOString(),
        until: new Date(heldView!.probeAt).toISOString(),
      },
    ]);
    expect(shownAfter).toEqual([]);
    for (const row of waiting) {
      expect(row.state).toBe('retry_wait');
      expect(row.history.at(-1)?.why).toBe('transport_hold:sending_paused');
      expect(row.nextAttemptAt).toBe(heldView!.probeAt);
    }
    expect(first.channels).toHaveLength(1);
    expect(probe.channels.map((c) => [c.channel, c.state])).toEqual([['email', 'accepted']]);
    expect(lifted).toMatchObject({ holdState: 'lifted', version: 2 });
    expect(lifted?.history.map((e) => e.s)).toEqual(['hold_started', 'hold_lifted']);
    expect(after.map((o) => o.channels[0]?.state)).toEqual(['accepted', 'accepted']);
    const rows = await Promise.all(
      [probe, ...after].map(async (o) => (await h.ledger.get(o.channels[0]!.dedupeKey))!),
    );
    expect(rows.flatMap((r) => r.history).some((e) => e.s === 'rejected')).toBe(false);
    expect(sim.requests().length).toBe(smsBefore);
    expect(fake.requests.length - calls).toBe(4);
  });
});
