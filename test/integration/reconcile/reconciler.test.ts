import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { ATTENTION_SHARDS, attentionPartitions } from '../../../lib/ledger/attentionIndex.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { METRIC } from '../../../lib/observability.js';
import { Reconciler } from '../../../lib/reconcile/Reconciler.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import type { Transport } from '../../../lib/transports/port.js';
import { RestTransport } from '../../../lib/transports/RestTransport.js';
import {
  createHarness,
  type Harness,
  restTransports,
  withoutKeyEnforcement,
} from '../../support/dispatchHarness.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';
import { closedPort } from '../../support/fakes/outbound.js';
import { receiptIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import {
  countingLookups,
  lookupWithoutKeys,
  meterDynamo,
  pushEvidenceOnly,
  RecordingMetrics,
  reconcilerFor,
} from './support.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1.
let sim: RunningProviderSimulator;
let h: Harness;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}` });
const acceptedSends = () => sim.requests().filter((r) => r.outcome === 'accepted');

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

describe('reconciler: lookup strategy against the simulator', () => {
  it('accept_then_drop: the unknown row becomes accepted with the simulator message id, and the provider accepted exactly once', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'rec-accept-drop' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    const first = await h.dispatcher().handle(body, envelope());
    const metrics = new RecordingMetrics();
    clock.advance(30_000);
    // Act
    const run = await reconcilerFor(h.ledger, restTransports(sim), clock, 'r1', metrics).runAll();
    const redelivery = await h.dispatcher().handle(body, envelope());
    // Assess
    expect(first.channels[0]).toMatchObject({ state: 'unknown' });
    const key = first.channels[0]!.dedupeKey;
    expect(run.outcomes.find((o) => o.dedupeKey === key)).toMatchObject({
      action: 'resolved_by_lookup',
      state: 'accepted',
    });
    const row = await h.ledger.get(key);
    expect(row).toMatchObject({ state: 'accepted', providerMessageId: sim.messages()[0]!.id });
    expect(row?.history.at(-1)).toMatchObject({ s: 'accepted', by: 'reconciler:r1', why: 'lookup:accepted' });
    expect(row?.attn).toBeUndefined();
    expect(sim.messages()).toHaveLength(1);
    expect(sim.requests().map((r) => r.outcome)).toEqual(['dropped']);
    expect(redelivery.channels[0]).toMatchObject({ state: 'accepted', action: 'already_final' });
    expect(metrics.counts).toContainEqual({
      name: METRIC.resolutions,
      value: 1,
      dimensions: { strategy: 'lookup', outcome: 'accepted' },
    });
    expect(metrics.gauges.get(METRIC.oldestUnknownAgeSeconds)).toBe(30);
  });

  it("a row that failed over is looked up with the provider that holds its attempt, not the channel's first", async () => {
    // Prepare: the first email provider refuses connections (never left), so the row fails over to the
    // simulator, which accepts and drops the answer: the row is unknown on the second provider.
    const port = await closedPort();
    const down = new RestTransport({ baseUrl: `http://127.0.0.1:${port}`, channel: 'email' });
    const primary: Transport = {
      name: 'primary-down',
      channel: 'email',
      capabilities: down.capabilities,
      send: (m, k) => down.send(m, k),
    };
    const rest = restTransports(sim);
    const providers = { email: [primary, rest.email], sms: [rest.sms] };
    const body = JSON.stringify(resetIntent({ eventId: 'rec-failover-holder' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    const first = await h
      .dispatcher({ transports: { email: primary, sms: rest.sms }, providers })
      .handle(body, envelope());
    clock.advance(30_000);
    // Act
    const run = await new Reconciler({
      ledger: h.ledger,
      transports: { email: primary, sms: rest.sms },
      providers,
      purposes: new PurposeRegistry(),
      clock,
      runId: 'r-fo',
    }).runAll();
    // Assess
    const key = first.channels[0]!.dedupeKey;
    expect(first.channels[0]).toMatchObject({ state: 'unknown' });
    expect(run.outcomes.find((o) => o.dedupeKey === key)).toMatchObject({
      action: 'resolved_by_lookup',
      state: 'accepted',
    });
    const row = await h.ledger.get(key);
    expect(row).toMatchObject({
      state: 'accepted',
      transport: 'rest',
      providerMessageId: sim.messages()[0]!.id,
    });
    expect(row?.history.filter((e) => e.s === 'dispatching').map((e) => e.p)).toEqual([
      'primary-down',
      'rest',
    ]);
  });

  it('drop_before_accept inside the key window: lookup finds nothing, the row is left for replay, and the redelivery sends exactly once', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'rec-drop-window' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'drop_before_accept' });
    const first = await h.dispatcher().handle(body, envelope());
    const key = first.channels[0]!.dedupeKey;
    const before = await h.ledger.get(key);
    // Act
    const run = await reconcilerFor(h.ledger, restTransports(sim), clock).runAll();
    const afterRun = await h.ledger.get(key);
    const redelivery = await h.dispatcher({ workerId: 'dispatch:b' }).handle(body, envelope());
    // Assess
    expect(first).toMatchObject({ disposition: 'retry_later', channels: [{ state: 'unknown' }] });
    expect(run.outcomes.find((o) => o.dedupeKey === key)).toMatchObject({
      action: 'left_for_replay',
      state: 'unknown',
    });
    expect(afterRun?.version).toBe(before?.version);
    expect(redelivery.channels[0]).toMatchObject({ state: 'accepted', action: 'sent' });
    expect(acceptedSends()).toHaveLength(1);
    expect(sim.messages()).toHaveLength(1);
  });

  it('drop_before_accept after the key window closed: quarantined, and the redelivery sends nothing', async () => {
    // Prepare: a provider that remembers keys for five minutes, a receipt (24 h ambiguity deadline)
    const short = new RestTransport({ baseUrl: sim.url, channel: 'email', keyRetentionSeconds: 300 });
    const transports = { email: short, sms: restTransports(sim).sms };
    const body = JSON.stringify(receiptIntent({ eventId: 'rec-drop-late' }));
    sim.addFault({ match: { channel: 'email' }, fault: 'drop_before_accept' });
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    clock.advance(10 * 60_000);
    // Act
    const run = await reconcilerFor(h.ledger, transports, clock).runAll();
    const redelivery = await h.dispatcher({ transports }).handle(body, envelope());
    // Assess
    const key = first.channels[0]!.dedupeKey;
    expect(run.outcomes.find((o) => o.dedupeKey === key)).toMatchObject({
      action: 'quarantined',
      why: 'lookup_not_found:no_replay_window',
    });
    expect(redelivery.channels[0]).toMatchObject({ state: 'quarantined', action: 'left_for_reconciler' });
    expect(acceptedSends()).toHaveLength(0);
  });

  it('drop_before_accept on a provider without keys but with lookup: nothing found, quarantined at once', async () => {
    // Prepare
    const transports = { email: lookupWithoutKeys(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(resetIntent({ eventId: 'rec-drop-nokey' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'drop_before_accept' });
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    // Act
    const run = await reconcilerFor(h.ledger, transports, clock).runAll();
    // Assess
    const key = first.channels[0]!.dedupeKey;
    expect(first.channels[0]).toMatchObject({ state: 'unknown', action: 'marked_unknown' });
    expect(run.outcomes.find((o) => o.dedupeKey === key)).toMatchObject({
      action: 'quarantined',
      why: 'lookup_not_found:no_replay_window',
    });
    expect((await h.ledger.listAttention('quarantined')).items.map((r) => r.pk)).toContain(key);
    expect(acceptedSends()).toHaveLength(0);
  });

  it('a provider without keys, lookup or events: nothing can settle it, so it is quarantined with that reason', async () => {
    // Prepare
    const transports = {
      email: withoutKeyEnforcement(restTransports(sim).email),
      sms: restTransports(sim).sms,
    };
    const body = JSON.stringify(resetIntent({ eventId: 'rec-nothing' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'drop_before_accept' });
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    // Act
    const run = await reconcilerFor(h.ledger, transports, clock).runAll();
    // Assess
    const row = await h.ledger.get(first.channels[0]!.dedupeKey);
    expect(run.outcomes.find((o) => o.dedupeKey === row?.pk)?.action).toBe('quarantined');
    expect(row?.history.at(-1)).toMatchObject({ s: 'quarantined', why: 'no_resolution_strategy' });
  });

  it('a push-evidence provider waits for events until the purpose deadline, then the row is quarantined', async () => {
    // Prepare: password-reset has a 15 minute ambiguity deadline
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(resetIntent({ eventId: 'rec-deadline' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    const key = first.channels[0]!.dedupeKey;
    // Act
    clock.advance(14 * 60_000);
    const early = await reconcilerFor(h.ledger, transports, clock).runAll();
    clock.advance(2 * 60_000);
    const late = await reconcilerFor(h.ledger, transports, clock).runAll();
    // Assess
    expect(early.outcomes.find((o) => o.dedupeKey === key)?.action).toBe('waiting_for_evidence');
    expect(late.outcomes.find((o) => o.dedupeKey === key)).toMatchObject({
      action: 'quarantined',
      why: 'ambiguity_deadline_passed:no_evidence',
    });
    expect(sim.messages()).toHaveLength(1);
  });
});

describe('reconciler: races and cost', () => {
  it('two reconciler runs on the same row produce one resolution (version-conditioned)', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'rec-race' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    const first = await h.dispatcher().handle(body, envelope());
    const row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
    const a = reconcilerFor(h.ledger, restTransports(sim), clock, 'a');
    const b = reconcilerFor(new DynamoLedger(localDynamo().doc, h.table), restTransports(sim), clock, 'b');
    // Act
    const outcomes = await Promise.all([a.resolveRow(row), b.resolveRow(row)]);
    // Assess
    expect(outcomes.map((o) => o.action).sort()).toEqual(['raced', 'resolved_by_lookup']);
    const after = await h.ledger.get(row.pk);
    expect(after?.history.filter((e) => e.s === 'accepted')).toHaveLength(1);
    expect(after?.version).toBe(row.version + 1);
  });

  it('a run with zero unknown rows does no per-row work: one query per index partition, no lookups, no transitions', async () => {
    // Prepare: a fresh table with only happy-path rows
    const { raw, doc } = localDynamo();
    const table = await createLedgerTable(raw, 'reconcile-empty');
    const meter = meterDynamo(doc);
    const ledger = new DynamoLedger(doc, table);
    const email = countingLookups(restTransports(sim).email);
    const sms = countingLookups(restTransports(sim).sms);
    // Act
    const run = await reconcilerFor(ledger, { email, sms }, clock).runAll();
    // Assess
    expect(run).toMatchObject({ processed: 0, resolved: 0, quarantined: 0, hasMore: false, pages: 1 });
    expect(email.lookups + sms.lookups).toBe(0);
    // One Query per attention partition of `unknown`: each shard, plus the unsharded legacy partition.
    expect(Object.fromEntries(meter.commands)).toEqual({
      QueryCommand: attentionPartitions('unknown', ATTENTION_SHARDS.default).length,
    });
  });
});
