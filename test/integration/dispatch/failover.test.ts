import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { transitionsOf } from '../../../lib/archive/transitions.js';
import { sesClient } from '../../../lib/aws/messagingClients.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { parseSendGridEvent } from '../../../lib/evidence/webhooks.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { describeProviderAttempts } from '../../../lib/ledger/providerAttempts.js';
import { startSesLocal } from '../../../lib/local/sesLocal.js';
import type { RunningProviderSimulator } from '../../../lib/simulator/ProviderSimulator.js';
import { CIRCUIT_METRIC, healthKey, ProviderHealth } from '../../../lib/transports/health.js';
import type { Transport } from '../../../lib/transports/port.js';
import { SendGridTransport } from '../../../lib/transports/SendGridTransport.js';
import { SesTransport } from '../../../lib/transports/SesTransport.js';
import { loadCorpus } from '../../contract/providers/corpus.js';
import { createHarness, type Harness } from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { labelOf, testLabelKeys } from '../../support/evidenceLabels.js';
import { closedPort } from '../../support/fakes/outbound.js';
import { type Behaviour, ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';
import { resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// Issue 29, failover. Real servers: DynamoDB Local (global setup), aws-ses-v2-local behind a scripted
// relay (which answers what the emulator never does: 503s, a hang), and a SendGrid v3 Mail Send fake.
// The error answers are the documented payloads of the provider corpus (test/contract/providers).
const corpus = loadCorpus();
const documented = (id: string): Behaviour => {
  const c = corpus.find((x) => x.id === id);
  if (c?.kind !== 'error') throw new Error(`no corpus error ${id}`);
  const payload = c.payload as { status: number; headers?: Record<string, string>; body?: unknown };
  return {
    reply: payload.status,
    ...(payload.headers ? { headers: payload.headers } : {}),
    body: payload.body,
  };
};

let emulator: { url: string; stop(): Promise<void> };
let ses: ScriptedHttpServer;
let sendgrid: ScriptedHttpServer;
let h: Harness;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `fo-${++seq}` });
const metrics: Array<{ name: string; dimensions?: Readonly<Record<string, string>> }> = [];
const sink = {
  count: (name: string, _value?: number, dimensions?: Readonly<Record<string, string>>) => {
    metrics.push({ name, ...(dimensions ? { dimensions } : {}) });
  },
};

const sesTransport = (endpoint: string) =>
  new SesTransport({
    client: sesClient({ region: 'us-east-1', endpoint }),
    from: 'no-reply@sendproof.test',
    timeoutMs: 400,
  });
const sendgridTransport = () =>
  new SendGridTransport({
    baseUrl: sendgrid.url,
    from: 'no-reply@sendproof.test',
    apiKey: async () => 'SG.test-key',
    timeouts: { responseTimeoutMs: 400 },
  });

const health = (failures: number) =>
  new ProviderHealth(localDynamo().doc, h.table, {
    settings: { failures, windowSeconds: 60, openSeconds: 30, cacheMs: 0 },
    workerId: 'dispatch:test',
    now: () => clock.now(),
    metrics: sink,
  });

const dispatcherWith = (email: readonly Transport[], circuits?: ProviderHealth) =>
  h.dispatcher({
    transports: { ...h.transports, email: email[0]! },
    providers: { email, sms: [h.transports.sms] },
    ...(circuits ? { circuits } : {}),
    metrics: sink,
  });

/** The attempts a row names, from its append-only history: provider and attempt number. */
const attempts = (row: DeliveryRecord | undefined) =>
  (row?.history ?? []).filter((e) => e.s === 'dispatching').map((e) => ({ p: e.p, n: e.n, why: e.why }));

const sendgridSaw = (row: DeliveryRecord | undefined) =>
  sendgrid.requests.filter((r) => r.body.includes(row ? labelOf(row) : '-none-')).length;
const sesSaw = (row: DeliveryRecord | undefined) =>
  ses.requests.filter((r) => r.body.includes(row ? labelOf(row) : '-none-')).length;

beforeAll(async () => {
  emulator = await startSesLocal();
  ses = await ScriptedHttpServer.start(() => ({ forwardTo: emulator.url }));
  sendgrid = await ScriptedHttpServer.start((req) =>
    req.method === 'POST' && req.path === '/v3/mail/send'
      ? { reply: 202, headers: { 'x-message-id': `sg-${sendgrid.requests.length}` } }
      : { reply: 404, body: { errors: [{ message: 'not found' }] } },
  );
  // No REST provider here: the harness's own transports are replaced by SES and SendGrid.
  h = await createHarness({ url: 'http://127.0.0.1:9' } as unknown as RunningProviderSimulator, clock);
});
afterAll(async () => {
  await sendgrid.stop();
  await ses.stop();
  await emulator.stop();
});
beforeEach(async () => {
  metrics.length = 0;
  clock.set(Date.now());
  // Each case starts with closed circuits (the items are shared by every dispatcher on the table).
  for (const provider of ['ses', 'sendgrid'])
    await localDynamo().doc.send(new DeleteCommand({ TableName: h.table, Key: { pk: healthKey(provider) } }));
});

describe('failover between providers: only when the ledger proves the first did not take it', () => {
  it('SES answering 503 before accepting: that row stays unknown on SES, the circuit opens, and the next reset goes through SendGrid once, its row naming both providers', async () => {
    // Prepare: a circuit that opens on the first 5xx; SES answers the documented 503 once.
    const circuits = health(1);
    const dispatcher = dispatcherWith([sesTransport(ses.url), sendgridTransport()], circuits);
    ses.enqueue(documented('ses/error-common-service-unavailable'));
    const first = JSON.stringify(resetIntent({ eventId: 'fo-503-first' }, clock.now()));
    const next = JSON.stringify(resetIntent({ eventId: 'fo-503-next' }, clock.now()));

    // Act
    const a = await dispatcher.handle(first, envelope());
    const b = await dispatcher.handle(next, envelope());

    // Assess: the 503 may have run, so its row is unknown on SES and SendGrid never saw it.
    const rowA = await h.ledger.get(a.channels[0]!.dedupeKey);
    expect(rowA).toMatchObject({ state: 'unknown', transport: 'ses' });
    expect(sendgridSaw(rowA)).toBe(0);
    // The next reset skipped SES (circuit open) and SendGrid took it, once.
    const rowB = await h.ledger.get(b.channels[0]!.dedupeKey);
    expect(rowB).toMatchObject({ state: 'accepted', transport: 'sendgrid' });
    expect(rowB?.providerMessageId).toMatch(/^sg-/);
    expect(sendgridSaw(rowB)).toBe(1);
    expect(sesSaw(rowB)).toBe(0);
    expect(attempts(rowB)).toEqual([{ p: 'sendgrid', n: 1, why: 'gates_passed:circuit_open:ses' }]);
    expect((await circuits.read('ses')).state).toBe('open');
    expect(metrics).toContainEqual({ name: CIRCUIT_METRIC.opened, dimensions: { provider: 'ses' } });
    expect(metrics).toContainEqual({ name: CIRCUIT_METRIC.failovers, dimensions: { provider: 'ses' } });
  });

  it('SES refusing the connection (the request never left): the same row goes through SendGrid once and names both attempts', async () => {
    // Prepare: nothing listens on the SES endpoint (connect() refused: provably never left).
    const dispatcher = dispatcherWith([
      sesTransport(`http://127.0.0.1:${await closedPort()}`),
      sendgridTransport(),
    ]);
    const body = JSON.stringify(resetIntent({ eventId: 'fo-never-left' }, clock.now()));

    // Act
    const out = await dispatcher.handle(body, envelope());

    // Assess
    const row = await h.ledger.get(out.channels[0]!.dedupeKey);
    expect(row).toMatchObject({ state: 'accepted', transport: 'sendgrid', attempts: 2 });
    expect(attempts(row)).toEqual([
      { p: 'ses', n: 1, why: 'gates_passed' },
      { p: 'sendgrid', n: 2, why: 'retry' },
    ]);
    expect(row?.history.map((e) => e.why)).toContain('failover:ses>sendgrid:request_never_left:ECONNREFUSED');
    expect(sendgridSaw(row)).toBe(1);
    // SendGrid got the row's one label: its evidence names the same row.
    expect(sendgrid.requests.at(-1)!.body).toContain(labelOf(row!));
    // `sendproof status` / `explain` and the archive show the switch and why.
    expect(describeProviderAttempts(row!)).toMatch(
      /^#1 ses → retry_wait \(failover:ses>sendgrid:request_never_left:ECONNREFUSED\) · #2 sendgrid → accepted \(provider_accepted\) msg=sg-/,
    );
    const archived = transitionsOf({
      eventName: 'INSERT',
      dynamodb: { NewImage: marshall(row, { removeUndefinedValues: true }) as never },
    });
    expect(archived.map((l) => [l.to_state, l.transport, l.reason])).toEqual([
      ['dispatching', 'ses', 'gates_passed'],
      ['retry_wait', 'sendgrid', 'failover:ses>sendgrid:request_never_left:ECONNREFUSED'],
      ['dispatching', 'sendgrid', 'retry'],
      ['accepted', 'sendgrid', 'provider_accepted'],
    ]);
  });

  it('SES refusing our configuration (MessageRejected "not verified", cause provider): the row moves to SendGrid', async () => {
    // Prepare
    const dispatcher = dispatcherWith([sesTransport(ses.url), sendgridTransport()]);
    ses.enqueue(documented('ses/error-message-rejected-not-verified'));
    const body = JSON.stringify(resetIntent({ eventId: 'fo-not-verified' }, clock.now()));

    // Act
    const out = await dispatcher.handle(body, envelope());

    // Assess
    const row = await h.ledger.get(out.channels[0]!.dedupeKey);
    expect(row).toMatchObject({ state: 'accepted', transport: 'sendgrid' });
    expect(attempts(row).map((a) => a.p)).toEqual(['ses', 'sendgrid']);
    expect(sesSaw(row)).toBe(1);
    expect(sendgridSaw(row)).toBe(1);
  });

  it("a row that failed over and lost SendGrid's answer is unknown on SendGrid, and SendGrid's event settles that same row", async () => {
    // Prepare: SES never reached, SendGrid reads the request and never answers.
    const dispatcher = dispatcherWith([
      sesTransport(`http://127.0.0.1:${await closedPort()}`),
      sendgridTransport(),
    ]);
    sendgrid.enqueue({ hang: true });
    const body = JSON.stringify(resetIntent({ eventId: 'fo-evidence' }, clock.now()));
    const out = await dispatcher.handle(body, envelope());
    const unknown = await h.ledger.get(out.channels[0]!.dedupeKey);
    const recorder = new EvidenceRecorder({
      labels: testLabelKeys,
      ledger: h.ledger,
      store: new DynamoEvidenceStore(localDynamo().doc, h.table),
      purposes: new PurposeRegistry(),
      clock,
    });
    // Act: SendGrid's documented delivered event, carrying the custom_args the adapter sent.
    const parsed = parseSendGridEvent({
      email: 'someone@example.com',
      event: 'delivered',
      sg_event_id: 'sg-event-fo-1',
      sg_message_id: 'sg-fo.filter0001',
      timestamp: Math.floor(clock.now() / 1000),
      sendproof_key: labelOf(unknown!),
    });
    if (parsed.kind !== 'evidence') throw new Error(`not evidence: ${parsed.reason}`);
    const recorded = await recorder.record(parsed.evidence);
    // Assess
    expect(unknown).toMatchObject({ state: 'unknown', transport: 'sendgrid' });
    expect(recorded).toMatchObject({ kind: 'recorded', dedupeKey: unknown!.pk, state: 'accepted' });
    const settled = await h.ledger.get(unknown!.pk);
    expect(settled).toMatchObject({ state: 'accepted', transport: 'sendgrid' });
    expect(attempts(settled).map((a) => a.p)).toEqual(['ses', 'sendgrid']);
  });

  it('SES timing out after the request was written: no failover, the row is unknown and SendGrid never sees it, not even on redelivery', async () => {
    // Prepare: SES reads the whole request and never answers.
    const dispatcher = dispatcherWith([sesTransport(ses.url), sendgridTransport()], health(5));
    ses.enqueue({ hang: true });
    const body = JSON.stringify(resetIntent({ eventId: 'fo-timeout' }, clock.now()));

    // Act
    const out = await dispatcher.handle(body, envelope());
    clock.advance(120_000);
    const again = await dispatcher.handle(body, envelope());

    // Assess
    const row = await h.ledger.get(out.channels[0]!.dedupeKey);
    expect(row).toMatchObject({ state: 'unknown', transport: 'ses' });
    expect(row?.history.at(-1)?.why).toBe('ambiguous:provider_timeout_after_send');
    expect(again.channels[0]!.state).toBe('unknown');
    expect(sendgridSaw(row)).toBe(0);
    expect(attempts(row).map((a) => a.p)).toEqual(['ses']);
  });

  it('the circuit opens after the threshold, rows skip SES while it is open, and a probe closes it', async () => {
    // Prepare: two 5xx open it; SES answers the documented 503 twice, then accepts again (the emulator).
    const circuits = health(2);
    const dispatcher = dispatcherWith([sesTransport(ses.url), sendgridTransport()], circuits);
    ses.enqueue(
      documented('ses/error-common-service-unavailable'),
      documented('ses/error-common-service-unavailable'),
    );
    const reset = (id: string) => JSON.stringify(resetIntent({ eventId: `fo-circuit-${id}` }, clock.now()));
    const rowOf = async (out: Awaited<ReturnType<typeof dispatcher.handle>>) =>
      h.ledger.get(out.channels[0]!.dedupeKey);

    // Act + Assess: two 503s, each row unknown on SES; the circuit is open after the second.
    const u1 = await rowOf(await dispatcher.handle(reset('u1'), envelope()));
    expect((await circuits.read('ses')).state).toBe('closed');
    const u2 = await rowOf(await dispatcher.handle(reset('u2'), envelope()));
    expect([u1?.state, u2?.state]).toEqual(['unknown', 'unknown']);
    expect(await circuits.read('ses')).toMatchObject({ state: 'open', reason: 'failures:2/60s' });
    // While open: rows go to SendGrid, SES sees none of them.
    const sesBefore = ses.requests.length;
    const skipped = [
      await rowOf(await dispatcher.handle(reset('s1'), envelope())),
      await rowOf(await dispatcher.handle(reset('s2'), envelope())),
    ];
    expect(skipped.map((r) => r?.transport)).toEqual(['sendgrid', 'sendgrid']);
    expect(ses.requests.length).toBe(sesBefore);
    // After openSeconds: one probe goes to SES, the emulator accepts it, and the circuit closes.
    clock.advance(31_000);
    const probe = await rowOf(await dispatcher.handle(reset('probe'), envelope()));
    expect(probe).toMatchObject({ state: 'accepted', transport: 'ses' });
    const closed = await circuits.read('ses');
    expect(closed.state).toBe('closed');
    expect(closed.history.map((e) => e.s)).toEqual(['circuit_open', 'circuit_half_open', 'circuit_closed']);
    const after = await rowOf(await dispatcher.handle(reset('after'), envelope()));
    expect(after).toMatchObject({ state: 'accepted', transport: 'ses' });
    expect(metrics.filter((m) => m.name === CIRCUIT_METRIC.opened)).toHaveLength(1);
    expect(metrics.filter((m) => m.name === CIRCUIT_METRIC.closed)).toHaveLength(1);
  });

  it('a recipient-caused rejection (SendGrid 400 on personalizations.0.to) is not retried at the next provider', async () => {
    // Prepare: SendGrid first, SES second; SendGrid refuses the address.
    const dispatcher = dispatcherWith([sendgridTransport(), sesTransport(ses.url)]);
    sendgrid.enqueue(documented('sendgrid/error-400-recipient'));
    const body = JSON.stringify(resetIntent({ eventId: 'fo-bad-address' }, clock.now()));

    // Act
    const out = await dispatcher.handle(body, envelope());

    // Assess
    const row = await h.ledger.get(out.channels[0]!.dedupeKey);
    expect(row).toMatchObject({ state: 'rejected', transport: 'sendgrid', attempts: 1 });
    expect(sesSaw(row)).toBe(0);
    expect(metrics.filter((m) => m.name === CIRCUIT_METRIC.failovers)).toHaveLength(0);
  });
});
