import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { PullEvidence, restEventFeed } from '../../../lib/evidence/PullEvidence.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import type { Transport } from '../../../lib/transports/port.js';
import { createHarness, type Harness, restTransports } from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { testLabelKeys } from '../../support/evidenceLabels.js';
import { resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { pushEvidenceOnly } from './support.js';

// Real servers: DynamoDB Local and the provider simulator (its GET /v1/events feed) over HTTP.
const clock = new ManualClock(Date.now());
let sim: RunningProviderSimulator;
let h: Harness;
let store: DynamoEvidenceStore;
let seq = 0;

const pullFor = (name: string) =>
  new PullEvidence({
    name,
    feed: restEventFeed({ baseUrl: sim.url, limit: 3 }),
    store,
    recorder: new EvidenceRecorder({
      labels: testLabelKeys,
      ledger: h.ledger,
      store,
      suppressions: h.suppressions,
      purposes: new PurposeRegistry(),
      clock,
    }),
    now: () => clock.now(),
  });

const dispatch = async (transports: { email: Transport; sms: Transport } = restTransports(sim)) => {
  const intent = resetIntent(
    { eventId: `pull-${++seq}`, recipient: { ref: `u-pull-${seq}`, email: 'a@example.com' } },
    clock.now(),
  );
  const out = await h.dispatcher({ transports }).handle(JSON.stringify(intent), { messageId: `m${seq}` });
  return (await h.ledger.get(out.channels[0]!.dedupeKey))!;
};

beforeAll(async () => {
  sim = await startProviderSimulator({ clock });
  h = await createHarness(sim, clock);
  store = new DynamoEvidenceStore(localDynamo().doc, h.table);
});
afterAll(async () => {
  await sim?.stop();
});
beforeEach(() => {
  sim.reset();
});

describe('pull evidence from GET /v1/events', () => {
  it('settles an unknown row from the feed, pages through with a durable cursor, and reads nothing twice', async () => {
    // Prepare: the provider accepted, our answer was lost; its feed says sent, then delivered
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const lost = await dispatch(transports);
    const other = await dispatch();
    const pull = pullFor('feed-a');
    // Act
    const first = await pull.poll();
    const second = await pullFor('feed-a').poll();
    // Assess
    expect(lost.state).toBe('unknown');
    // Pages of 3: two with events, then an empty one that says the feed is drained.
    expect(first).toMatchObject({ pages: 3, events: 4, cursor: '4', overtaken: false });
    expect(first.results).toEqual({ recorded: 1, fact_recorded: 3 });
    expect(second).toMatchObject({ events: 0, cursor: '4' });
    expect(await store.getCursor('feed-a')).toEqual({ cursor: '4', version: 2 });
    const settled = (await h.ledger.get(lost.pk))!;
    expect(settled.history.map((e) => e.s)).toEqual(['dispatching', 'unknown', 'accepted']);
    expect(settled.history.at(-1)).toMatchObject({ by: 'evidence:rest', why: 'rest:sent' });
    expect(settled.delivery?.status).toBe('delivered');
    expect((await h.ledger.get(other.pk))?.delivery?.status).toBe('delivered');
  });

  it('a bounce delivered twice and out of order changes the row once per event and suppresses once', async () => {
    // Prepare
    sim.addFault({ match: { channel: 'email' }, fault: 'bounce', duplicate: true, outOfOrder: true });
    const row = await dispatch();
    // Act
    const result = await pullFor('feed-b').poll();
    // Assess
    expect(sim.events().map((e) => e.type)).toEqual(['bounced', 'bounced', 'sent', 'sent']);
    expect(result.results).toEqual({ fact_recorded: 2, duplicate: 2 });
    const after = (await h.ledger.get(row.pk))!;
    expect(after.state).toBe('accepted');
    expect(after.delivery?.status).toBe('bounced_permanent');
    expect(after.delivery?.h.map((e) => e.f)).toEqual(['bounced_permanent', 'sent']);
    expect(
      (await h.suppressions.list(row.tenant)).filter((e) => e.recipientRef === row.recipientRef),
    ).toHaveLength(1);
  });

  it('deliver_after_ms: the delivery is not in the feed until it happened', async () => {
    // Prepare
    sim.addFault({ match: { channel: 'email' }, fault: 'soft_bounce', deliverAfterMs: 60_000 });
    const row = await dispatch();
    const pull = pullFor('feed-c');
    // Act
    const early = await pull.poll();
    clock.advance(61_000);
    const late = await pull.poll();
    // Assess
    expect(early.results).toEqual({ fact_recorded: 1 });
    expect(late.results).toEqual({ fact_recorded: 1 });
    expect((await h.ledger.get(row.pk))?.delivery?.status).toBe('bounced_transient');
    expect(await h.suppressions.isSuppressed(row.tenant, row.recipientRef, 'email')).toEqual({
      suppressed: false,
    });
  });
});
