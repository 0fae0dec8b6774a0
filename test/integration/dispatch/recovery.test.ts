import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { invalidBodyId } from '../../../lib/dispatch/sideRows.js';
import { systemClock } from '../../../lib/domain/clock.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { OperatorDecisions } from '../../../lib/reconcile/OperatorDecisions.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import type { SendResult, Transport } from '../../../lib/transports/port.js';
import {
  CONTENT_KEY,
  crashAt,
  createHarness,
  type Harness,
  NoticeQueue,
  pdfAttachment,
  restTransports,
  SimulatedCrash,
  sweeperFor,
  withoutKeyEnforcement,
} from '../../support/dispatchHarness.js';
import { healthReportIntent, MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1.
let sim: RunningProviderSimulator;
let h: Harness;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = (receiveCount = 1) => ({ messageId: `msg-${++seq}`, receiveCount });
const accepted = () => sim.requests().filter((r) => r.outcome === 'accepted' || r.outcome === 'replayed');

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

describe('a replay is a question: its non-accepted answer never settles an unknown row', () => {
  it('500 → unknown, then 429 and 429 on the replays: the row returns to unknown, spends no attempt, never reaches rejected', async () => {
    // Prepare: attempt 1 is answered 500 (ambiguous); every replay after it is throttled
    const body = JSON.stringify(resetIntent({ eventId: 'replay-429' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'status_500', times: 1 });
    sim.addFault({ match: { channel: 'email' }, fault: 'status_429', times: 5, retryAfterSeconds: 1 });
    // Act: the first delivery and three replays (as the parked message comes back)
    const outcomes = [await h.dispatcher().handle(body, envelope())];
    for (let i = 0; i < 3; i++) {
      clock.advance(30_000);
      outcomes.push(await h.dispatcher().handle(body, envelope()));
    }
    // Assess
    const row = await h.ledger.get(outcomes[0]!.channels[0]!.dedupeKey);
    expect(row?.state).toBe('unknown');
    expect(row?.attempts).toBe(1);
    const states = row!.history.map((e) => e.s);
    expect(states).not.toContain('rejected');
    expect(states).not.toContain('retry_wait');
    expect(row!.history.filter((e) => e.why?.startsWith('replay_answer:retryable:'))).toHaveLength(3);
    expect(outcomes.every((o) => o.disposition === 'retry_later')).toBe(true);
  });

  it('a fallback intent in that situation never creates an SMS row', async () => {
    // Prepare
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'replay-429-fb', attachments: [pdfAttachment()] }),
    );
    sim.addFault({ match: { channel: 'email' }, fault: 'status_500', times: 1 });
    sim.addFault({ match: { channel: 'email' }, fault: 'status_429', times: 10, retryAfterSeconds: 1 });
    // Act
    let last = await h.dispatcher().handle(body, envelope());
    for (let i = 0; i < 4; i++) {
      clock.advance(30_000);
      last = await h.dispatcher().handle(body, envelope());
    }
    // Assess
    const email = await h.ledger.get(last.channels[0]!.dedupeKey);
    expect(email?.state).toBe('unknown');
    expect(await h.ledger.get(email!.pk.replace(/:email$/, ':sms'))).toBeUndefined();
    expect(sim.requests().filter((r) => r.channel === 'sms')).toHaveLength(0);
  });

  it('409 invalid_idempotent_request on a replay is recorded as evidence and leaves the row unknown', async () => {
    // Prepare: the provider accepted attempt 1 (answer lost); the replay offers other content under the key
    const first = resetIntent({ eventId: 'replay-409' }, clock.now());
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const out = await h.dispatcher().handle(JSON.stringify(first), envelope());
    const row = await h.ledger.get(out.channels[0]!.dedupeKey);
    // Act: replay the same row with a transport whose request body differs (the provider sees a mismatch)
    clock.advance(30_000);
    const email = restTransports(sim).email;
    const differing = {
      ...email,
      name: email.name,
      channel: email.channel,
      capabilities: email.capabilities,
      send: (message: Parameters<typeof email.send>[0], key: string) =>
        email.send({ ...message, text: `${message.text} (changed)` }, key),
    };
    const replay = await h
      .dispatcher({ transports: { email: differing, sms: h.transports.sms } })
      .handle(JSON.stringify(first), envelope());
    // Assess
    const after = await h.ledger.get(row!.pk);
    expect(replay.channels[0]?.state).toBe('unknown');
    expect(after?.state).toBe('unknown');
    expect(after?.history.at(-1)?.why).toBe('replay_answer:ambiguous:invalid_idempotent_request');
    expect(sim.messages()).toHaveLength(1);
  });

  it('a clock moved past the key window between retry_wait and resume: no request reaches the provider', async () => {
    // Prepare: a row that was unknown once and now waits to retry (as older code left such rows)
    const body = JSON.stringify(receiptLike('window-closed'));
    sim.addFault({ match: { channel: 'email' }, fault: 'status_500', times: 1 });
    const first = await h.dispatcher().handle(body, envelope());
    let row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
    const toDispatching = await h.ledger.transition({
      pk: row.pk,
      from: 'unknown',
      to: 'dispatching',
      expectedVersion: row.version,
      by: 'test',
      why: 'replay_under_enforced_key',
      set: { leaseOwner: 'test', leaseUntil: clock.now() + 1 },
      now: clock.now(),
    });
    row = toDispatching.kind === 'ok' ? toDispatching.record : row;
    const toWait = await h.ledger.transition({
      pk: row.pk,
      from: 'dispatching',
      to: 'retry_wait',
      expectedVersion: row.version,
      by: 'test',
      why: 'retryable:rate_limited',
      set: { nextAttemptAt: clock.now() + 60_000 },
      now: clock.now(),
    });
    expect(toWait.kind).toBe('ok');
    const requestsBefore = sim.requests().length;
    // Act: the simulator remembers keys for 24 h; the redelivery comes 25 h later
    clock.advance(25 * 3600_000);
    const resumed = await h.dispatcher().handle(body, envelope());
    // Assess
    expect(sim.requests().length).toBe(requestsBefore);
    expect(resumed.channels[0]).toMatchObject({ state: 'unknown', action: 'left_for_reconciler' });
    const after = await h.ledger.get(row.pk);
    expect(after?.history.at(-1)).toMatchObject({ s: 'unknown', why: 'replay_window_closed' });
  });
});

describe('a late provider answer is applied, not thrown away', () => {
  it('lease 1 s, the provider answers after 3 s, another dispatcher marks the row unknown at 1.5 s → accepted with the id', async () => {
    // Prepare (real time: the simulator delays its answer for real)
    const body = JSON.stringify(resetIntent({ eventId: 'late-answer' }, Date.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'delay', delayMs: 3_000, times: 1 });
    const slow = h.dispatcher({ workerId: 'dispatch:slow', clock: systemClock, leaseMs: 1_000 });
    const other = h.dispatcher({ workerId: 'dispatch:other', clock: systemClock, leaseMs: 1_000 });
    // Act
    const inFlight = slow.handle(body, envelope());
    await new Promise((r) => setTimeout(r, 1_500));
    const marked = await other.handle(body, envelope());
    const answered = await inFlight;
    // Assess
    expect(marked.channels[0]?.state).toBe('unknown');
    expect(answered.channels[0]).toMatchObject({ state: 'accepted', action: 'late_answer_applied' });
    const row = await h.ledger.get(answered.channels[0]!.dedupeKey);
    expect(row?.state).toBe('accepted');
    expect(row?.providerMessageId).toBe(sim.messages()[0]?.id);
    expect(row?.history.map((e) => e.why).slice(-2)).toEqual([
      'dispatching_lease_expired',
      'late_provider_answer',
    ]);
    expect(sim.messages()).toHaveLength(1);
  }, 20_000);
});

/**
 * A provider double in the test's process that enforces the key (as Resend and the REST provider do) and
 * answers from a script, one entry per call; a gated entry holds its answer until the test releases it.
 */
const scriptedEmail = (script: Array<() => Promise<SendResult>>): Transport & { calls: number } => {
  const transport = {
    name: 'rest',
    channel: 'email' as const,
    capabilities: {
      ...restTransports(sim).email.capabilities,
      idempotencyKey: true,
      keyRetentionSeconds: 86_400,
    },
    calls: 0,
    send: async () => {
      const answer = script[transport.calls];
      transport.calls += 1;
      if (!answer) throw new Error('scripted email: no answer scripted for this call');
      return answer();
    },
  };
  return transport;
};

describe('a late answer cannot launder a replay (invariant 6)', () => {
  // Its own tables: these notifications stay parked, and the sweep tests below must not see them.
  let lh: Harness;
  beforeAll(async () => {
    lh = await createHarness(sim, clock);
  });

  it("A's lease expires, B marks the row unknown and replays, the replay is ambiguous; A's late rejected is not applied and no fallback fires", async () => {
    // Prepare: A's request is refused, but its answer is held until after B's replay
    let releaseA!: () => void;
    const aHeld = new Promise<void>((resolve) => {
      releaseA = resolve;
    });
    let aSent!: () => void;
    const aInFlight = new Promise<void>((resolve) => {
      aSent = resolve;
    });
    const email = scriptedEmail([
      async () => {
        aSent();
        await aHeld;
        return { kind: 'rejected', reason: 'invalid recipient', code: 'invalid_to', cause: 'recipient' };
      },
      async () => ({ kind: 'ambiguous', reason: 'timeout_after_send' }),
    ]);
    const transports = { email, sms: lh.transports.sms };
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'launder-replay', attachments: [pdfAttachment()] }),
    );
    const a = lh.dispatcher({ workerId: 'dispatch:a', transports, leaseMs: 1_000 });
    const b = lh.dispatcher({ workerId: 'dispatch:b', transports, leaseMs: 1_000 });
    // Act: A dispatches; its lease runs out; B marks the row unknown, then replays it (the message comes back)
    const slow = a.handle(body, envelope());
    await aInFlight;
    clock.advance(2_000);
    const marked = await b.handle(body, envelope());
    clock.advance(30_000);
    const replayed = await b.handle(body, envelope());
    releaseA();
    const late = await slow;
    // Assess: the row stays unknown (B's replay may have been delivered); the SMS is never authorized
    expect(marked.channels[0]).toMatchObject({ state: 'unknown' });
    expect(replayed.channels[0]).toMatchObject({ state: 'unknown' });
    expect(email.calls).toBe(2);
    const row = await lh.ledger.get(marked.channels[0]!.dedupeKey);
    expect(row?.state).toBe('unknown');
    expect(row?.history.map((e) => e.why)).not.toContain('late_provider_answer:invalid_to');
    expect(late.channels.map((c) => c.action)).not.toContain('late_answer_applied');
    expect(late.channels.map((c) => c.channel)).toEqual(['email']);
    expect((await lh.ledger.getFlow(row!.logicalKey))?.activeIndex).toBe(0);
    expect(await lh.ledger.get(row!.pk.replace(/:email$/, ':sms'))).toBeUndefined();
    expect(sim.requests().filter((r) => r.channel === 'sms')).toHaveLength(0);
  });

  it('the late answer of the attempt the unknown row came from is still applied: rejected, and the fallback moves on', async () => {
    // Prepare: as above, but nobody replays before A's answer arrives
    let releaseA!: () => void;
    const aHeld = new Promise<void>((resolve) => {
      releaseA = resolve;
    });
    let aSent!: () => void;
    const aInFlight = new Promise<void>((resolve) => {
      aSent = resolve;
    });
    const email = scriptedEmail([
      async () => {
        aSent();
        await aHeld;
        return { kind: 'rejected', reason: 'invalid recipient', code: 'invalid_to', cause: 'recipient' };
      },
    ]);
    const transports = { email, sms: lh.transports.sms };
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'late-reject-direct', attachments: [pdfAttachment()] }),
    );
    const a = lh.dispatcher({ workerId: 'dispatch:a', transports, leaseMs: 1_000 });
    const b = lh.dispatcher({ workerId: 'dispatch:b', transports, leaseMs: 1_000 });
    // Act
    const slow = a.handle(body, envelope());
    await aInFlight;
    clock.advance(2_000);
    const marked = await b.handle(body, envelope());
    releaseA();
    const late = await slow;
    // Assess: the rejection is the truth about the only request that left; SMS follows
    expect(marked.channels[0]).toMatchObject({ state: 'unknown' });
    expect(late.channels[0]).toMatchObject({
      channel: 'email',
      state: 'rejected',
      action: 'late_answer_applied',
    });
    expect(late.channels[1]).toMatchObject({ channel: 'sms', state: 'accepted', action: 'sent' });
  });
});

describe('one channel active per logical notification', () => {
  it('an intent with delivery "all" for a notification that already has a fallback flow does not make SMS active', async () => {
    // Prepare: the fallback's email is unknown on a provider without keys
    const transports = {
      email: withoutKeyEnforcement(restTransports(sim).email),
      sms: restTransports(sim).sms,
    };
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const attachments = [pdfAttachment()];
    await h
      .dispatcher({ transports })
      .handle(JSON.stringify(healthReportIntent({ eventId: 'flow-then-all', attachments })), envelope());
    // Act: the same notification published again with delivery "all"
    const all = await h
      .dispatcher({ transports })
      .handle(
        JSON.stringify(healthReportIntent({ eventId: 'flow-then-all', attachments, delivery: 'all' })),
        envelope(),
      );
    // Assess
    expect(all.channels.map((c) => c.channel)).toEqual(['email']);
    expect(sim.requests().filter((r) => r.channel === 'sms')).toHaveLength(0);
  });
});

describe('nothing is stranded: the ledger sweep owns parked work', () => {
  it('a Retry-After beyond the inline budget parks the sealed intent; with the message gone, the sweep resumes it and it is sent once', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'long-retry-after' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'status_429', times: 1, retryAfterSeconds: 45 });
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices, { graceMs: 5_000 });
    // Act: the first delivery parks; its queue message is then lost (never redelivered)
    const parked = await h.dispatcher({ parkGraceMs: 5_000 }).handle(body, envelope());
    const early = await sweeper.sweep();
    clock.advance(45_000 + 5_000 + 1);
    const due = await sweeper.sweep();
    const [resumed] = await notices.deliver(h.dispatcher({ workerId: 'dispatch:resume' }));
    clock.advance(60_000);
    const final = await sweeper.sweep();
    // Assess
    expect(parked).toMatchObject({ disposition: 'retry_later', channels: [{ state: 'retry_wait' }] });
    expect(parked.visibleAfterMs).toBe(45_000);
    expect(early.resumed).toBe(0);
    expect(due.resumed).toBe(1);
    expect(resumed?.channels[0]).toMatchObject({ state: 'accepted', action: 'sent' });
    expect(accepted()).toHaveLength(1);
    // The notification is final: the seal is released on the next look.
    expect(final.released).toBe(1);
    const row = await h.ledger.get(parked.channels[0]!.dedupeKey);
    expect(await h.ledger.getSeal(row!.logicalKey)).toBeUndefined();
  });

  it('the sealed intent holds no secret in the clear, and opens only with its own logical key', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'sealed-secret' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'status_429', times: 1, retryAfterSeconds: 60 });
    // Act
    const parked = await h.dispatcher().handle(body, envelope());
    const row = await h.ledger.get(parked.channels[0]!.dedupeKey);
    const seal = await h.ledger.getSeal(row!.logicalKey);
    // Assess
    const stored = JSON.stringify(seal);
    for (const marker of Object.values(MARKERS)) expect(stored).not.toContain(marker);
    expect(JSON.stringify(row)).not.toContain('ciphertext');
    expect(seal?.rows).toEqual([{ channel: 'email', dedupeKey: row!.pk }]);
    expect(seal!.ttl).toBeLessThanOrEqual(Math.ceil(row!.expiresAt! / 1000));
  });

  it('a crash after the claim on the last receive: the message is gone; the sweep marks the row unknown and resumes the sealed intent, and the keyed replay sends once', async () => {
    // Prepare
    const body = JSON.stringify(resetIntent({ eventId: 'last-receive-claim' }, clock.now()));
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices);
    // Act
    await expect(
      h.dispatcher({ probe: crashAt('after_claim'), maxReceiveCount: 5 }).handle(body, envelope(5)),
    ).rejects.toThrow(SimulatedCrash);
    clock.advance(60_000 + 1);
    const swept = await sweeper.sweep();
    const [resumed] = await notices.deliver(h.dispatcher({ workerId: 'dispatch:b' }));
    // Assess
    expect(swept).toMatchObject({ markedUnknown: 1, resumed: 1 });
    expect(resumed?.channels[0]).toMatchObject({ state: 'accepted' });
    expect(accepted()).toHaveLength(1);
    const row = await h.ledger.get(resumed!.channels[0]!.dedupeKey);
    expect(row?.history.map((e) => e.why)).toEqual([
      'gates_passed',
      'dispatching_lease_expired',
      'replay_under_enforced_key',
      'provider_accepted',
    ]);
  });

  it('a crash after the claim (dispatching) on the last receive, no keys: the sweep makes the row a visible unknown, never left dispatching', async () => {
    // Prepare: a provider without keys, so nothing may replay
    const transports = {
      email: withoutKeyEnforcement(restTransports(sim).email),
      sms: restTransports(sim).sms,
    };
    const body = JSON.stringify(resetIntent({ eventId: 'last-receive-dispatching' }, clock.now()));
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices, { transports });
    // Act
    await expect(
      h
        .dispatcher({ transports, probe: crashAt('after_claim'), maxReceiveCount: 5 })
        .handle(body, envelope(5)),
    ).rejects.toThrow(SimulatedCrash);
    clock.advance(60_000 + 1);
    const swept = await sweeper.sweep();
    // Assess
    expect(swept).toMatchObject({ markedUnknown: 1, resumed: 0 });
    const key = resetIntentKey('last-receive-dispatching');
    const row = await h.ledger.get(key);
    expect(row?.state).toBe('unknown');
    const attention = await h.ledger.listAttention('unknown', { limit: 100 });
    expect(attention.items.map((r) => r.pk)).toContain(key);
    expect(notices.bodies).toHaveLength(0);
  });

  it('a retry_wait row long past due with nothing sealed becomes stalled with a reason', async () => {
    // Prepare: a retry that was parked, then its seal vanished (TTL, or written by older code)
    const body = JSON.stringify(resetIntent({ eventId: 'stranded-retry' }, clock.now()));
    sim.addFault({ match: { channel: 'email' }, fault: 'status_429', times: 1, retryAfterSeconds: 30 });
    const parked = await h.dispatcher().handle(body, envelope());
    const row = (await h.ledger.get(parked.channels[0]!.dedupeKey))!;
    await h.ledger.release(row.logicalKey);
    // Act
    clock.advance(30_000 + 10_000);
    const swept = await sweeperFor(h, clock, new NoticeQueue(), { graceMs: 1_000 }).sweep();
    // Assess
    expect(swept.stalled).toBeGreaterThanOrEqual(1);
    const after = await h.ledger.get(row.pk);
    expect(after?.state).toBe('stalled');
    expect(after?.history.at(-1)?.why).toBe('nothing_sealed');
  });
});

describe('fallback continues by itself', () => {
  it("an operator's resolve --outcome rejected on the unknown email: the sweep sends the SMS within one period", async () => {
    // Prepare
    const transports = {
      email: withoutKeyEnforcement(restTransports(sim).email),
      sms: restTransports(sim).sms,
    };
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'fb-operator', attachments: [pdfAttachment()] }),
    );
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    const notices = new NoticeQueue();
    const decisions = new OperatorDecisions({ ledger: h.ledger, purposes: new PurposeRegistry(), clock });
    // Act
    await decisions.decide({
      dedupeKey: first.channels[0]!.dedupeKey,
      outcome: 'rejected',
      reason: 'provider console shows no such message',
      operator: 'ops-7',
    });
    const swept = await sweeperFor(h, clock, notices, { transports }).sweep();
    const [resumed] = await notices.deliver(h.dispatcher({ transports }));
    // Assess
    expect(swept.resumed).toBe(1);
    expect(resumed?.channels.at(-1)).toMatchObject({ channel: 'sms', state: 'accepted', action: 'sent' });
    expect(sim.requests().filter((r) => r.channel === 'sms' && r.outcome === 'accepted')).toHaveLength(1);
  });

  it('operator resend works without an intent file while the sealed intent exists', async () => {
    // Prepare: a quarantined-to-be email (unknown on a provider without keys), sealed as a fallback
    const transports = {
      email: withoutKeyEnforcement(restTransports(sim).email),
      sms: restTransports(sim).sms,
    };
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const body = JSON.stringify(healthReportIntent({ eventId: 'fb-resend', attachments: [pdfAttachment()] }));
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    const notices = new NoticeQueue();
    const decisions = new OperatorDecisions({
      ledger: h.ledger,
      purposes: new PurposeRegistry(),
      clock,
      publisher: notices,
      newDecisionId: () => 'd-resend-1',
    });
    // Act
    const decided = await decisions.decide({
      dedupeKey: first.channels[0]!.dedupeKey,
      outcome: 'resend',
      reason: 'customer asked again, ticket T-881',
      operator: 'ops-7',
    });
    const [resent] = await notices.deliver(h.dispatcher({ transports }));
    // Assess
    expect(decided).toMatchObject({
      state: 'superseded',
      newDedupeKey: `${first.channels[0]!.dedupeKey}:resend=d-resend-1`,
    });
    expect(resent?.channels).toEqual([
      expect.objectContaining({ channel: 'email', state: 'accepted', dedupeKey: decided.newDedupeKey }),
    ]);
    const newRow = await h.ledger.get(decided.newDedupeKey!);
    expect(newRow?.resendOf).toBe(first.channels[0]!.dedupeKey);
  });
});

describe('horizons', () => {
  it("an invalid body's identifier is a keyed HMAC, never a plain sha256 of a body that holds a code", async () => {
    // Prepare
    const body = JSON.stringify({
      eventId: 'otp-bad',
      secrets: { otp: '123456' },
      purpose: 'password-reset',
    });
    // Act
    await h.dispatcher().handle(body, envelope());
    // Assess
    const plain = createHash('sha256').update(body).digest('hex');
    expect(await h.ledger.get(`invalid#${plain.slice(0, 32)}`)).toBeUndefined();
    const row = await h.ledger.get(`invalid#${invalidBodyId(body, CONTENT_KEY).slice(0, 32)}`);
    expect(row?.state).toBe('invalid');
    expect(row?.idempotencyKey).not.toBe(plain);
  });
});

/** A receipt-shaped reset (own event id) whose key the simulator enforces. */
function receiptLike(eventId: string) {
  return resetIntent({ eventId }, clock.now() + 48 * 3600_000 - 10 * 60_000);
}

function resetIntentKey(eventId: string) {
  return `acme-games:password-reset:${eventId}:player-73:email`;
}
