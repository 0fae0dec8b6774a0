import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
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
  SimulatedCrash,
  withoutKeyEnforcement,
} from '../../support/dispatchHarness.js';
import { healthReportIntent, MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1. The gate
// decisions that need neither (redelivery, content mismatch, expiry, suppression, checksums, revisions,
// invalid bodies, a poison batch) run on the in-memory ledger in test/unit/dispatch/gates.test.ts.
let sim: RunningProviderSimulator;
let h: Harness;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}` });
const accepted = (key?: string) =>
  sim.requests().filter((r) => r.outcome === 'accepted' && (key === undefined || r.idempotencyKey === key));

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

describe('dispatcher: crash at each edge, then replay the same intent', () => {
  it('crash before the claim: the replay sends once', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'crash-before-claim' }, clock.now()));
    // Act
    await expect(h.dispatcher({ probe: crashAt('before_claim') }).handle(body, envelope())).rejects.toThrow(
      SimulatedCrash,
    );
    const replay = await h.dispatcher().handle(body, envelope());
    // Assess
    expect(replay.channels[0]).toMatchObject({ state: 'accepted', action: 'sent' });
    expect(accepted()).toHaveLength(1);
  });

  it('crash after the claim (written directly as dispatching): the row becomes unknown on its lease, and a replay under the enforced key sends once', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'crash-after-claim' }, clock.now()));
    await expect(h.dispatcher({ probe: crashAt('after_claim') }).handle(body, envelope())).rejects.toThrow(
      SimulatedCrash,
    );
    // Act
    const early = await h.dispatcher({ workerId: 'dispatch:b' }).handle(body, envelope());
    clock.advance(61_000);
    const marked = await h.dispatcher({ workerId: 'dispatch:b' }).handle(body, envelope());
    clock.advance(30_000);
    const late = await h.dispatcher({ workerId: 'dispatch:b' }).handle(body, envelope());
    // Assess
    expect(early.disposition).toBe('retry_later');
    expect(marked).toMatchObject({ disposition: 'retry_later', channels: [{ state: 'unknown' }] });
    expect(late.channels[0]).toMatchObject({ state: 'accepted' });
    expect(accepted()).toHaveLength(1);
    const row = await h.ledger.get(late.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => e.why)).toEqual([
      'gates_passed',
      'dispatching_lease_expired',
      'replay_under_enforced_key',
      'provider_accepted',
    ]);
  });

  it('the provider accepted and the answer was lost: unknown, then a replay under the enforced key gets the original id', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'accept-then-drop' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    // Act
    const first = await h.dispatcher().handle(body, envelope());
    clock.advance(120_000);
    const replay = await h.dispatcher({ workerId: 'dispatch:b' }).handle(body, envelope());
    // Assess
    expect(first).toMatchObject({ disposition: 'retry_later', channels: [{ state: 'unknown' }] });
    expect(replay.channels[0]).toMatchObject({ state: 'accepted', providerMessageId: sim.messages()[0]?.id });
    expect(sim.requests().map((r) => r.outcome)).toEqual(['dropped', 'replayed']);
    expect(sim.messages()).toHaveLength(1);
    const row = await h.ledger.get(replay.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => e.s)).toEqual(['dispatching', 'unknown', 'dispatching', 'accepted']);
    expect(row?.history.map((e) => e.why).slice(2)).toEqual([
      'replay_under_enforced_key',
      'provider_replayed_original',
    ]);
  });

  it('a replay under an enforced key does not go out to a recipient suppressed meanwhile; the row stays unknown', async () => {
    // Prepare
    const body = JSON.stringify(
      resetIntent(
        {
          eventId: 'unknown-then-suppressed',
          recipient: { ref: 'player-later-suppressed', email: MARKERS.email },
        },
        clock.now(),
      ),
    );
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    const first = await h.dispatcher().handle(body, envelope());
    await h.suppressions.suppress('acme-games', 'player-later-suppressed', 'email', 'complaint');
    // Act
    const replay = await h.dispatcher({ workerId: 'dispatch:b' }).handle(body, envelope());
    // Assess
    expect(first.channels[0]?.state).toBe('unknown');
    expect(replay.channels[0]).toMatchObject({ state: 'unknown', action: 'left_for_reconciler' });
    expect(sim.requests().map((r) => r.outcome)).toEqual(['dropped']);
  });

  it('the answer was lost on a provider without idempotency keys: unknown, and the replay never sends', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'accept-then-drop-nokey' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    const transports = {
      email: withoutKeyEnforcement(restTransports(sim).email),
      sms: restTransports(sim).sms,
    };
    // Act
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    clock.advance(120_000);
    const replay = await h.dispatcher({ workerId: 'dispatch:b', transports }).handle(body, envelope());
    // Assess
    expect(first).toMatchObject({
      disposition: 'done',
      channels: [{ state: 'unknown', action: 'marked_unknown' }],
    });
    expect(replay.channels[0]).toMatchObject({ state: 'unknown', action: 'left_for_reconciler' });
    expect(sim.requests().map((r) => r.outcome)).toEqual(['dropped']);
  });

  it('the worker died after the provider accepted: the expired dispatching lease becomes a visible unknown', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'crash-after-provider' }, clock.now()));
    await expect(h.dispatcher({ probe: crashAt('after_provider') }).handle(body, envelope())).rejects.toThrow(
      SimulatedCrash,
    );
    // Act
    const early = await h.dispatcher({ workerId: 'dispatch:b' }).handle(body, envelope());
    clock.advance(61_000);
    const late = await h.dispatcher({ workerId: 'dispatch:b' }).handle(body, envelope());
    // Assess
    expect(early.disposition).toBe('retry_later');
    expect(late.channels[0]).toMatchObject({ state: 'unknown' });
    const page = await h.ledger.listAttention('unknown');
    expect(page.items.map((i) => i.pk)).toContain(late.channels[0]!.dedupeKey);
    // The parked message comes back once more: the enforced key makes the provider answer with the original.
    const resolved = await h.dispatcher({ workerId: 'dispatch:c' }).handle(body, envelope());
    expect(resolved.channels[0]).toMatchObject({ state: 'accepted' });
    expect(accepted()).toHaveLength(1);
    expect(sim.messages()).toHaveLength(1);
  });

  it('crash after the outcome was recorded: the replay finds it final and does not send', async () => {
    const body = JSON.stringify(resetIntent({ eventId: 'crash-after-outcome' }, clock.now()));
    await expect(h.dispatcher({ probe: crashAt('after_outcome') }).handle(body, envelope())).rejects.toThrow(
      SimulatedCrash,
    );
    const replay = await h.dispatcher().handle(body, envelope());
    expect(replay.channels[0]).toMatchObject({ state: 'accepted', action: 'already_final' });
    expect(accepted()).toHaveLength(1);
  });
});

describe('dispatcher gates', () => {
  it('a 429 with Retry-After is retried after the delay with the same key (real time)', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'throttled' }, Date.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'status_429', retryAfterSeconds: 1 });
    const started = Date.now();
    // Act: a real clock and a real sleep, to catch a seconds/milliseconds mix-up
    const result = await h
      .dispatcher({ clock: { now: () => Date.now() }, realSleep: true })
      .handle(body, envelope());
    // Assess
    const elapsed = Date.now() - started;
    expect(result.channels[0]?.state).toBe('accepted');
    const requests = sim.requests();
    expect(requests.map((r) => r.outcome)).toEqual(['throttled', 'accepted']);
    expect(new Set(requests.map((r) => r.idempotencyKey)).size).toBe(1);
    expect(elapsed).toBeGreaterThanOrEqual(1000);
    expect(elapsed).toBeLessThan(5000);
    const row = await h.ledger.get(result.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => e.s)).toEqual(['dispatching', 'retry_wait', 'dispatching', 'accepted']);
  });

  it('stops at the purpose retry budget with a rejected outcome that says why', async () => {
    const body = JSON.stringify(resetIntent({ eventId: 'budget' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'status_429', retryAfterSeconds: 0, times: 10 });
    const result = await h.dispatcher().handle(body, envelope());
    expect(result.channels[0]?.state).toBe('rejected');
    expect(sim.requests()).toHaveLength(3); // password-reset allows 3 attempts
    const row = await h.ledger.get(result.channels[0]!.dedupeKey);
    expect(row?.history.at(-1)?.why).toMatch(/^retry_budget_exhausted/);
  });

  it('re-checks expiry before a retry: a Retry-After past the expiry ends in expired, not a late send', async () => {
    const body = JSON.stringify(resetIntent({ eventId: 'expires-during-retry' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'status_429', retryAfterSeconds: 2 });
    const d = h.dispatcher({ sleep: async (ms) => clock.advance(ms + 10 * 60_000) });
    const result = await d.handle(body, envelope());
    expect(result.channels[0]?.state).toBe('expired');
    expect(accepted()).toHaveLength(0);
  });
});

describe('fallback delivery', () => {
  it('email rejected → exactly one SMS, carrying no attachment', async () => {
    sim.addFault({ match: { channel: 'email' }, fault: 'reject' });
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'fb-rejected', attachments: [pdfAttachment()] }),
    );
    const result = await h.dispatcher().handle(body, envelope());
    expect(result.channels.map((c) => [c.channel, c.state])).toEqual([
      ['email', 'rejected'],
      ['sms', 'accepted'],
    ]);
    expect(accepted().map((r) => r.channel)).toEqual(['sms']);
  });

  it('email unknown → no SMS; the parked message replays the email under its key and stops there', async () => {
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'fb-unknown', attachments: [pdfAttachment()] }),
    );
    const first = await h.dispatcher().handle(body, envelope());
    const again = await h.dispatcher().handle(body, envelope());
    expect(first).toMatchObject({
      disposition: 'retry_later',
      channels: [{ channel: 'email', state: 'unknown' }],
    });
    expect(again).toMatchObject({ disposition: 'done', channels: [{ channel: 'email', state: 'accepted' }] });
    expect(sim.requests().filter((r) => r.channel === 'sms')).toHaveLength(0);
  });

  it('email unknown on a provider without keys → no SMS; the message is acknowledged and the sealed intent waits in the ledger', async () => {
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
    const transports = {
      email: withoutKeyEnforcement(restTransports(sim).email),
      sms: restTransports(sim).sms,
    };
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'fb-unknown-nokey', attachments: [pdfAttachment()] }),
    );
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    const again = await h.dispatcher({ transports }).handle(body, envelope());
    // The queue no longer decides: the wait belongs to the ledger (no receives burnt while it lasts).
    expect(first).toMatchObject({
      disposition: 'done',
      channels: [{ state: 'unknown', action: 'waiting_for_active_channel' }],
    });
    expect(again).toMatchObject({
      disposition: 'done',
      channels: [{ action: 'waiting_for_active_channel' }],
    });
    expect(sim.requests().map((r) => r.channel)).toEqual(['email']);
    const email = await h.ledger.get(first.channels[0]!.dedupeKey);
    const seal = await h.ledger.getSeal(email!.logicalKey);
    expect(seal).toMatchObject({ fallback: true, reason: 'fallback_waits_for_active' });
    // Due when the email's ambiguity deadline (health-report: 4 h) has passed, unless settled sooner.
    expect(seal!.dueAt).toBeGreaterThanOrEqual(clock.now() + 4 * 3600_000 - 1_000);
  });

  it('four workers racing the same fallback intent produce exactly one SMS', async () => {
    // Prepare
    sim.addFault({ match: { channel: 'email' }, fault: 'reject', times: 10 });
    const body = JSON.stringify(healthReportIntent({ eventId: 'fb-race', attachments: [pdfAttachment()] }));
    const workers = Array.from({ length: 4 }, (_, i) => h.dispatcher({ workerId: `dispatch:r${i}` }));
    // Act: all at once, then keep redelivering until every worker is done
    let results = await Promise.all(workers.map((w) => w.handle(body, envelope())));
    for (let round = 0; round < 5 && results.some((r) => r.disposition === 'retry_later'); round++) {
      clock.advance(61_000);
      results = await Promise.all(workers.map((w) => w.handle(body, envelope())));
    }
    // Assess
    expect(results.every((r) => r.disposition === 'done')).toBe(true);
    expect(sim.requests().filter((r) => r.channel === 'email')).toHaveLength(1);
    expect(accepted().map((r) => r.channel)).toEqual(['sms']);
  });
});

describe('SQS batch handling', () => {
  it('writes no secret and no raw address to the ledger or the logs', async () => {
    const body = JSON.stringify(
      resetIntent({ eventId: 'secret-scan', channels: ['email', 'sms'] }, clock.now()),
    );
    sim.addFault({ match: { channel: 'sms' }, fault: 'accept_then_drop' });
    const result = await h.dispatcher().handle(body, envelope());
    const rows = await Promise.all(result.channels.map((c) => h.ledger.get(c.dedupeKey)));
    const haystack = JSON.stringify(rows) + h.logger.lines.join('\n');
    for (const secret of [MARKERS.token, MARKERS.email, MARKERS.phone])
      expect(haystack).not.toContain(secret);
    expect(h.logger.lines.length).toBeGreaterThan(0);
  });
});
