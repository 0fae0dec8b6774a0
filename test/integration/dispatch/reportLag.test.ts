import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { circuitLine } from '../../../cli/commands/stats.js';
import { type CommandRecord, captureAwsCommands } from '../../../lib/aws/commandLog.js';
import { dynamoDocumentClient } from '../../../lib/aws/dynamoClients.js';
import { sesClient } from '../../../lib/aws/messagingClients.js';
import { providerCircuitSchema } from '../../../lib/config.js';
import { circuitEntry } from '../../../lib/console/circuitsPanel.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { createOutcomeConsumer } from '../../../lib/events/OutcomeConsumer.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { parseLambdaEvent } from '../../../lib/evidence/events.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { startSesLocal } from '../../../lib/local/sesLocal.js';
import type { RunningProviderSimulator } from '../../../lib/simulator/ProviderSimulator.js';
import { CIRCUIT_METRIC, ProviderHealth, readFailoverCircuits } from '../../../lib/transports/health.js';
import { DynamoReportCounters } from '../../../lib/transports/ReportCounters.js';
import { ReportLagJudge } from '../../../lib/transports/ReportLagJudge.js';
import { bucketOf, reportsKey } from '../../../lib/transports/reportLag.js';
import { SendGridTransport } from '../../../lib/transports/SendGridTransport.js';
import { SesTransport } from '../../../lib/transports/SesTransport.js';
import { createHarness, type Harness } from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { sesEventBridgeEvent, testLabelKeys } from '../../support/evidenceLabels.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';
import { MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { streamPoller } from '../../support/outcomeStream.js';

// Issue 29, the circuit opening when delivery reports fall behind. Real servers: DynamoDB Local (global
// setup) and its stream, aws-ses-v2-local (SES accepts every send), a SendGrid v3 Mail Send fake. The
// outcomes consumer keeps the counters from the table's stream; the reconcile run's judgement reads them.
// SES delivery reports are the documented EventBridge "Email Delivered" shape
// (https://docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-contents.html).
const settings = providerCircuitSchema().parse({ openSeconds: 30, cacheMs: 0 });
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const ROWS = 20;

let emulator: { url: string; stop(): Promise<void> };
let sendgrid: ScriptedHttpServer;
let h: Harness;
let clock: ManualClock;
let seq = 0;
const metrics: Array<{ name: string; dimensions?: Readonly<Record<string, string>> }> = [];
const sink = {
  count: (name: string, _value?: number, dimensions?: Readonly<Record<string, string>>) => {
    metrics.push({ name, ...(dimensions ? { dimensions } : {}) });
  },
};
let capture: { records: CommandRecord[]; stop: () => void };

const health = (workerId: string) =>
  new ProviderHealth(localDynamo().doc, h.table, {
    settings,
    workerId,
    now: () => clock.now(),
    metrics: sink,
  });

const dispatcher = () =>
  h.dispatcher({
    transports: { ...h.transports, email: ses() },
    providers: { email: [ses(), sendgridTransport()], sms: [h.transports.sms] },
    circuits: health('dispatch:test'),
    metrics: sink,
  });
const ses = () =>
  new SesTransport({
    client: sesClient({ region: 'us-east-1', endpoint: emulator.url }),
    from: 'no-reply@sendproof.test',
    timeoutMs: 2_000,
  });
const sendgridTransport = () =>
  new SendGridTransport({
    baseUrl: sendgrid.url,
    from: 'no-reply@sendproof.test',
    apiKey: async () => 'SG.test-key',
    timeouts: { responseTimeoutMs: 2_000 },
  });

/** The outcomes consumer on the harness table's stream, its counter client recorded as the function's. */
const outcomesStream = async () => {
  const { endpoint } = localDynamo();
  const doc = dynamoDocumentClient({
    region: 'us-east-1',
    endpoint,
    caller: { function: 'outcomes', settings: { ledgerTable: h.table } },
  });
  const batches: number[] = [];
  const consume = createOutcomeConsumer({
    sink: { publish: async () => ({ failedIds: [] }) },
    logger: quiet,
    reports: { counters: new DynamoReportCounters(doc, h.table), lagMs: settings.reportLagSeconds * 1000 },
  });
  const poller = await streamPoller(h.table, (event: DynamoDBStreamEvent) => {
    batches.push(event.Records.length);
    return consume(event);
  });
  return {
    batches,
    async drain() {
      while ((await poller.pollOnce()) > 0);
      await poller.flush();
    },
  };
};

const judge = () =>
  new ReportLagJudge({
    counters: new DynamoReportCounters(localDynamo().doc, h.table),
    circuits: health('reconcile'),
    settings,
    now: () => clock.now(),
  });

const sendResets = async (prefix: string, n: number): Promise<DeliveryRecord[]> => {
  const d = dispatcher();
  const rows: DeliveryRecord[] = [];
  for (let i = 0; i < n; i += 1) {
    const out = await d.handle(JSON.stringify(resetIntent({ eventId: `${prefix}-${i}` }, clock.now())), {
      messageId: `rl-${++seq}`,
    });
    rows.push((await h.ledger.get(out.channels[0]!.dedupeKey))!);
  }
  return rows;
};

const recorder = () =>
  new EvidenceRecorder({
    labels: testLabelKeys,
    ledger: h.ledger,
    store: new DynamoEvidenceStore(localDynamo().doc, h.table),
    purposes: new PurposeRegistry(),
    clock,
  });

/** SES's documented Delivery event for the row, as EventBridge delivers it. */
const delivered = async (row: DeliveryRecord) => {
  const [parsed] = parseLambdaEvent(
    sesEventBridgeEvent(row, 'Delivery', {
      id: `eb-${++seq}`,
      at: clock.now(),
      destination: [MARKERS.email],
      extra: { delivery: { timestamp: new Date(clock.now()).toISOString(), recipients: [MARKERS.email] } },
    }),
  );
  if (parsed?.kind !== 'evidence') throw new Error(`not evidence: ${JSON.stringify(parsed)}`);
  const result = await recorder().record(parsed.evidence);
  expect(result).toMatchObject({ kind: 'fact_recorded' });
};

const counterUpdates = () =>
  capture.records.filter(
    (r) =>
      r.function === 'outcomes' && r.command === 'UpdateItem' && r.resources[0]?.keyPrefix === 'reports#…',
  );

beforeAll(async () => {
  emulator = await startSesLocal();
  sendgrid = await ScriptedHttpServer.start((req) =>
    req.method === 'POST' && req.path === '/v3/mail/send'
      ? { reply: 202, headers: { 'x-message-id': `sg-${sendgrid.requests.length}` } }
      : { reply: 404, body: { errors: [{ message: 'not found' }] } },
  );
});
afterAll(async () => {
  await sendgrid.stop();
  await emulator.stop();
});
beforeEach(async () => {
  metrics.length = 0;
  clock = new ManualClock(Date.now());
  // A table (and stream) per case: the counters and circuits of one case are not the next one's.
  h = await createHarness({ url: 'http://127.0.0.1:9' } as unknown as RunningProviderSimulator, clock);
  capture = captureAwsCommands();
});
afterEach(() => capture.stop());

describe('the provider circuit opens when delivery reports fall behind (issue 29)', () => {
  it(`${ROWS} resets accepted on SES with no report after the lag: the reconcile judgement opens SES (slow_reports), the next reset goes through SendGrid, and the counter was written once per batch`, async () => {
    // Prepare: 20 resets accepted by SES; the stream consumer counts them.
    const rows = await sendResets('silent', ROWS);
    expect(rows.map((r) => [r.state, r.transport])).toEqual(rows.map(() => ['accepted', 'ses']));
    const stream = await outcomesStream();
    await stream.drain();
    const counter = await localDynamo().doc.send(
      new GetCommand({ TableName: h.table, Key: { pk: reportsKey('ses', bucketOf(clock.now())) } }),
    );
    // Act: the reconcile run, once the lag has passed for the minute they were accepted in.
    clock.advance((settings.reportLagSeconds + 120) * 1000);
    const verdicts = await judge().judge(['ses', 'sendgrid']);
    const [next] = await sendResets('after', 1);

    // Assess: one counter write per stream batch (not per notification), holding all 20.
    expect(counter.Item).toMatchObject({ kind: 'provider_reports', accepted: ROWS, reported: 0 });
    expect(counter.Item?.ttl).toBeGreaterThan(Math.floor(clock.now() / 1000));
    // The stream gave one batch of the 40 row records (claims and acceptances), then one of the counter
    // item's own record, which counts nothing and writes nothing.
    expect(stream.batches).toEqual([2 * ROWS, 1]);
    expect(counterUpdates()).toHaveLength(1);
    expect(verdicts).toMatchObject([
      {
        provider: 'ses',
        opened: true,
        judgement: { accepted: ROWS, reported: 0, late: ROWS, slow: true },
      },
      { provider: 'sendgrid', opened: false, judgement: { accepted: 0, slow: false } },
    ]);
    const circuit = await health('cli').read('ses');
    expect(circuit).toMatchObject({ state: 'open', reason: `slow_reports:${ROWS}/${ROWS}/1800s` });
    expect(circuit.history.map((e) => [e.s, e.by])).toEqual([['circuit_open', 'reconcile']]);
    expect(metrics).toContainEqual({ name: CIRCUIT_METRIC.opened, dimensions: { provider: 'ses' } });
    expect(next).toMatchObject({ state: 'accepted', transport: 'sendgrid' });
    expect(next?.history.find((e) => e.s === 'dispatching')?.why).toBe('gates_passed:circuit_open:ses');
    // `sendproof stats` shows the circuit and why it opened (the read model the console shares).
    const [email] = await readFailoverCircuits(localDynamo().doc, h.table, [
      { channel: 'email', providers: ['ses', 'sendgrid'] },
    ]);
    const line = circuitLine({
      channel: 'email',
      ...circuitEntry(email!.circuits[0]!, 1, settings.windowSeconds, clock.now()),
    });
    expect(line).toContain(`circuit email #1 ses: open until`);
    expect(line).toContain(
      `${ROWS} of ${ROWS} delivery reports late over 1800 s (slow_reports:${ROWS}/${ROWS}/1800s)`,
    );
  });

  it(`${ROWS} resets accepted on SES, each reported delivered within the lag: the judgement leaves SES closed and the next reset goes through SES`, async () => {
    // Prepare: accepted, then SES's Delivery events a few seconds later.
    const rows = await sendResets('reported', ROWS);
    clock.advance(5_000);
    for (const row of rows) await delivered(row);
    const stream = await outcomesStream();
    await stream.drain();

    // Act
    clock.advance((settings.reportLagSeconds + 120) * 1000);
    const verdicts = await judge().judge(['ses']);
    const [next] = await sendResets('after', 1);

    // Assess
    expect(verdicts).toMatchObject([
      { provider: 'ses', opened: false, judgement: { accepted: ROWS, reported: ROWS, late: 0, slow: false } },
    ]);
    expect((await health('cli').read('ses')).state).toBe('closed');
    expect(metrics.filter((m) => m.name === CIRCUIT_METRIC.opened)).toEqual([]);
    expect(next).toMatchObject({ state: 'accepted', transport: 'ses' });
  });

  it('after a probe closes the circuit, the minutes that opened it do not open it again', async () => {
    // Prepare: the circuit opened on 20 silent acceptances, then its open period passed.
    await sendResets('reopen', ROWS);
    const stream = await outcomesStream();
    await stream.drain();
    clock.advance((settings.reportLagSeconds + 120) * 1000);
    expect((await judge().judge(['ses']))[0]?.opened).toBe(true);
    clock.advance((settings.openSeconds + 1) * 1000);
    // Act: the probe goes to SES, which answers: closed. The next reconcile run judges again.
    const [probe] = await sendResets('probe', 1);
    const again = await judge().judge(['ses']);

    // Assess
    expect(probe).toMatchObject({ state: 'accepted', transport: 'ses' });
    expect(again).toMatchObject([
      { provider: 'ses', state: 'closed', opened: false, judgement: { accepted: 0 } },
    ]);
    expect((await health('cli').read('ses')).history.map((e) => e.s)).toEqual([
      'circuit_open',
      'circuit_half_open',
      'circuit_closed',
    ]);
    // The circuit item this judgement created had no failure window: a 5xx afterwards still counts.
    const strict = new ProviderHealth(localDynamo().doc, h.table, {
      settings: { ...settings, failures: 1 },
      workerId: 'dispatch:strict',
      now: () => clock.now(),
    });
    await strict.observe('ses', { kind: 'ambiguous', reason: 'provider_error_after_send:503' }, false);
    expect(await strict.read('ses')).toMatchObject({ state: 'open', reason: 'failures:1/60s' });
  });
});
