import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { type RunningWebhookServer, startWebhookServer } from '../../../lib/local/WebhookServer.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import {
  generateSigningKeys,
  type SignedRequest,
  type SigningKeys,
  signResend,
  signSendGrid,
  signTwilio,
} from '../../../lib/simulator/webhookSigners.js';
import {
  CapturingLogger,
  createHarness,
  type Harness,
  restTransports,
} from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { labelOf, testLabelKeys } from '../../support/evidenceLabels.js';
import { MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { RecordingMetrics } from './support.js';

// Real servers: DynamoDB Local, the provider simulator, and the evidence endpoint over HTTP on 127.0.0.1.
// Signatures are made with the providers' own schemes (svix, twilio, ECDSA) and checked by their libraries.
let sim: RunningProviderSimulator;
let h: Harness;
let server: RunningWebhookServer;
let keys: SigningKeys;
let store: DynamoEvidenceStore;
const metrics = new RecordingMetrics();
const logger = new CapturingLogger();
const clock = new ManualClock(Date.now());

const post = async (path: string, request: SignedRequest, query = '') =>
  fetch(`${server.url}/${path}${query}`, { method: 'POST', headers: request.headers, body: request.body });

let seq = 0;
const accepted = async (channel: 'email' | 'sms', ref?: string): Promise<DeliveryRecord> => {
  const intent = resetIntent(
    {
      eventId: `wh-${channel}-${++seq}`,
      channels: [channel],
      ...(ref ? { recipient: { ref, email: MARKERS.email, phone: MARKERS.phone } } : {}),
    },
    clock.now(),
  );
  const out = await h.dispatcher({ transports: restTransports(sim) }).handle(JSON.stringify(intent), {
    messageId: `m-${seq}`,
  });
  const row = (await h.ledger.get(out.channels[0]!.dedupeKey))!;
  expect(row.state).toBe('accepted');
  return row;
};

const refusals = () => metrics.counts.filter((c) => c.name === 'WebhookRefused');

/** What the ledger holds for a row and its key hash: a refused request must leave both as they were. */
const snapshot = async (row: DeliveryRecord) =>
  JSON.stringify([await h.ledger.get(row.pk), (await store.eventsFor(row.idempotencyKey)).events]);

const resendPayload = (row: DeliveryRecord, type = 'email.delivered') => ({
  type,
  created_at: new Date(clock.now()).toISOString(),
  data: {
    email_id: row.providerMessageId,
    to: [MARKERS.email],
    tags: [{ name: 'sendproof-key', value: labelOf(row) }],
  },
});
const sendgridEvents = (row: DeliveryRecord, event = 'delivered', id = `sg-${++seq}`) => [
  {
    email: MARKERS.email,
    event,
    sg_event_id: id,
    sg_message_id: `${row.providerMessageId}.filter0001`,
    timestamp: Math.floor(clock.now() / 1000),
    sendproof_key: labelOf(row),
  },
];

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
  keys = generateSigningKeys();
  store = new DynamoEvidenceStore(localDynamo().doc, h.table);
  const recorder = new EvidenceRecorder({
    labels: testLabelKeys,
    ledger: h.ledger,
    store,
    suppressions: h.suppressions,
    purposes: new PurposeRegistry(),
    clock,
    metrics,
    logger,
  });
  server = await startWebhookServer({ recorder, secrets: async () => keys.secrets, logger, metrics });
});
afterAll(async () => {
  await server?.stop();
  await sim?.stop();
});

describe('signed push evidence', () => {
  it('Resend: a valid Svix-signed delivery is recorded; unsigned, forged and replayed ones get 401 and change nothing', async () => {
    // Prepare
    const row = await accepted('email');
    const valid = signResend(keys, resendPayload(row));
    const tampered = { ...valid, body: valid.body.replace('email.delivered', 'email.bounced') };
    const stale = signResend(keys, resendPayload(row), new Date(Date.now() - 10 * 60_000));
    const other = signResend(
      { ...keys, secrets: { ...keys.secrets, resend: generateSigningKeys().secrets.resend } },
      resendPayload(row),
    );
    const before = await snapshot(row);
    const count = refusals().length;
    // Act
    const unsigned = await post('resend', {
      headers: { 'content-type': 'application/json' },
      body: valid.body,
    });
    const forged = await post('resend', tampered);
    const wrongKey = await post('resend', other);
    const replayed = await post('resend', stale);
    const between = await snapshot(row);
    const ok = await post('resend', valid);
    // Assess
    expect([unsigned.status, forged.status, wrongKey.status, replayed.status]).toEqual([401, 401, 401, 401]);
    expect(between).toBe(before);
    expect(
      refusals()
        .slice(count)
        .map((c) => c.dimensions),
    ).toEqual([
      { provider: 'resend', reason: 'unsigned' },
      { provider: 'resend', reason: 'forged' },
      { provider: 'resend', reason: 'forged' },
      { provider: 'resend', reason: 'replayed' },
    ]);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ results: ['fact_recorded'] });
    expect((await h.ledger.get(row.pk))?.delivery).toMatchObject({
      status: 'delivered',
      h: [{ by: 'evidence:resend', why: 'resend:email.delivered' }],
    });
  });

  it('Twilio: a valid status callback is recorded once even when replayed; a forged or unsigned one gets 401', async () => {
    // Prepare
    const row = await accepted('sms');
    const url = `${server.url}/twilio?k=${labelOf(row)}`;
    const params = {
      MessageSid: row.providerMessageId!,
      MessageStatus: 'delivered',
      To: MARKERS.phone,
      AccountSid: 'AC0',
    };
    const valid = signTwilio(keys, url, params);
    const forged = signTwilio(keys, url, { ...params, MessageStatus: 'undelivered' });
    forged.body = new URLSearchParams({ ...params, MessageStatus: 'failed' }).toString();
    const otherKey = signTwilio(
      { ...keys, secrets: { ...keys.secrets, twilio: 'f'.repeat(32) } },
      url,
      params,
    );
    const before = await snapshot(row);
    const count = refusals().length;
    // Act
    const unsigned = await post(
      'twilio',
      { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: valid.body },
      `?k=${labelOf(row)}`,
    );
    const tampered = await post('twilio', forged, `?k=${labelOf(row)}`);
    const wrongKey = await post('twilio', otherKey, `?k=${labelOf(row)}`);
    const between = await snapshot(row);
    const first = await post('twilio', valid, `?k=${labelOf(row)}`);
    const replay = await post('twilio', valid, `?k=${labelOf(row)}`);
    // Assess
    expect([unsigned.status, tampered.status, wrongKey.status]).toEqual([401, 401, 401]);
    expect(between).toBe(before);
    expect(
      refusals()
        .slice(count)
        .map((c) => c.dimensions?.reason),
    ).toEqual(['unsigned', 'forged', 'forged']);
    expect(await first.json()).toEqual({ results: ['fact_recorded'] });
    // Twilio signs no timestamp: a replayed valid callback verifies, and the event id makes it a no-op.
    expect(await replay.json()).toEqual({ results: ['duplicate'] });
    const after = (await h.ledger.get(row.pk))!;
    expect(after.delivery?.h).toHaveLength(1);
    expect(after.delivery).toMatchObject({ status: 'delivered', h: [{ by: 'evidence:twilio' }] });
  });

  it('SendGrid: a valid ECDSA-signed batch is recorded; forged, unsigned and replayed ones get 401', async () => {
    // Prepare
    const row = await accepted('email');
    const events = sendgridEvents(row, 'bounce');
    const valid = signSendGrid(keys, events);
    const tampered = { ...valid, body: valid.body.replace('"bounce"', '"delivered"') };
    const stale = signSendGrid(keys, events, new Date(Date.now() - 10 * 60_000));
    const before = await snapshot(row);
    const count = refusals().length;
    // Act
    const unsigned = await post('sendgrid', {
      headers: { 'content-type': 'application/json' },
      body: valid.body,
    });
    const forged = await post('sendgrid', tampered);
    const replayed = await post('sendgrid', stale);
    const between = await snapshot(row);
    const ok = await post('sendgrid', valid);
    // Assess
    expect([unsigned.status, forged.status, replayed.status]).toEqual([401, 401, 401]);
    expect(between).toBe(before);
    expect(
      refusals()
        .slice(count)
        .map((c) => c.dimensions?.reason),
    ).toEqual(['unsigned', 'forged', 'replayed']);
    expect(await ok.json()).toEqual({ results: ['fact_recorded'] });
    expect((await h.ledger.get(row.pk))?.delivery?.status).toBe('bounced_permanent');
    expect(await h.suppressions.isSuppressed(row.tenant, row.recipientRef, 'email')).toMatchObject({
      suppressed: true,
    });
  });

  it('a genuinely signed SendGrid bounce carrying our unkeyed key hash and row key is refused, counted and never applied', async () => {
    // Prepare: anyone with a send-only key on the account (or a second deployment on it) can send to a
    // bouncing address with these custom args: the hash is SHA-256 of a guessable key, the row key its
    // base64url (the labels before they were sealed). SendGrid signs the bounce it produces.
    const row = await accepted('email', 'u-forged-hash');
    const [event] = sendgridEvents(row, 'bounce');
    const forged = signSendGrid(keys, [
      {
        ...event,
        sg_message_id: 'attacker-message.filter0001',
        sendproof_key: row.idempotencyKey,
        sendproof_row: Buffer.from(row.pk, 'utf8').toString('base64url'),
      },
    ]);
    const before = await snapshot(row);
    // Act
    const response = await post('sendgrid', forged);
    // Assess: verified (the signature is SendGrid's), then refused, visibly, with nothing written
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ results: ['refused'] });
    expect(await snapshot(row)).toBe(before);
    expect(await h.suppressions.isSuppressed(row.tenant, row.recipientRef, 'email')).toMatchObject({
      suppressed: false,
    });
    expect(metrics.counts.filter((c) => c.name === 'EvidenceRefused').at(-1)?.dimensions).toEqual({
      source: 'sendgrid',
      reason: 'label_unauthenticated',
    });
    expect(logger.lines.join('\n')).toContain('evidence refused');
  });

  it("a signed bounce with the row's authentic label but another message id is refused: the row speaks only for its own message", async () => {
    // Prepare: the label was seen on another event (every deployment on the account receives them all)
    // and replayed on a message sent to a bouncing address
    const row = await accepted('email', 'u-replayed-label');
    const [event] = sendgridEvents(row, 'bounce');
    const replayed = signSendGrid(keys, [{ ...event, sg_message_id: 'someone-elses.filter0001' }]);
    // Act
    const response = await post('sendgrid', replayed);
    // Assess
    expect(await response.json()).toEqual({ results: ['refused'] });
    expect(await h.ledger.get(row.pk)).toMatchObject({ state: 'accepted', version: row.version });
    expect((await h.ledger.get(row.pk))?.delivery).toBeUndefined();
    expect(await h.suppressions.isSuppressed(row.tenant, row.recipientRef, 'email')).toMatchObject({
      suppressed: false,
    });
    expect(metrics.counts.filter((c) => c.name === 'EvidenceRefused').at(-1)?.dimensions).toEqual({
      source: 'sendgrid',
      reason: 'message_id_mismatch',
    });
  });

  it('an unknown provider path is 404 and counted; no address from any body reaches the logs', async () => {
    // Act
    const response = await post('mailgun', { headers: {}, body: JSON.stringify({ to: MARKERS.email }) });
    // Assess
    expect(response.status).toBe(404);
    expect(refusals().at(-1)?.dimensions).toEqual({ provider: 'mailgun', reason: 'unknown_provider' });
    const logged = logger.lines.join('\n');
    expect(logged).toContain('webhook refused');
    expect(logged).not.toContain(MARKERS.email);
    expect(logged).not.toContain(MARKERS.phone);
  });
});

describe('the simulator pushes signed webhooks', () => {
  it('a bounce the simulator injects arrives as a signed SendGrid event and an SMS delivery as a Twilio callback', async () => {
    // Prepare: a second simulator that pushes to the endpoint (the rows are sent through it)
    const pushing = await startProviderSimulator({
      webhooks: { url: server.url, keys, email: 'sendgrid', sms: 'twilio' },
    });
    try {
      const transports = restTransports(pushing);
      pushing.addFault({ match: { channel: 'email' }, fault: 'bounce', duplicate: true });
      const email = resetIntent(
        {
          eventId: `push-${++seq}`,
          recipient: { ref: `u-push-${seq}`, email: MARKERS.email, phone: MARKERS.phone },
          channels: ['email', 'sms'],
        },
        clock.now(),
      );
      // Act
      const out = await h.dispatcher({ transports }).handle(JSON.stringify(email), { messageId: `p-${seq}` });
      const [mail, sms] = out.channels.map((c) => c.dedupeKey);
      const deadline = Date.now() + 10_000;
      let rows: Array<DeliveryRecord | undefined> = [];
      do {
        await new Promise((r) => setTimeout(r, 100));
        rows = [await h.ledger.get(mail!), await h.ledger.get(sms!)];
      } while (
        // Both email events (processed, bounce) race to the endpoint: wait for both, not only the decisive one.
        (rows[0]?.delivery?.status !== 'bounced_permanent' ||
          rows[0]?.delivery?.h.length !== 2 ||
          rows[1]?.delivery?.status !== 'delivered') &&
        Date.now() < deadline
      );
      // Assess
      expect(rows[0]?.delivery).toMatchObject({
        status: 'bounced_permanent',
        h: expect.arrayContaining([expect.objectContaining({ by: 'evidence:sendgrid' })]),
      });
      expect(rows[0]?.delivery?.h).toHaveLength(2);
      expect(rows[1]?.delivery).toMatchObject({
        status: 'delivered',
        h: expect.arrayContaining([expect.objectContaining({ by: 'evidence:twilio' })]),
      });
    } finally {
      await pushing.stop();
    }
  });
});
