import { describe, expect, it } from 'vitest';
import { slotCredit } from '../../../lib/domain/pacing.js';
import { Pacer } from '../../../lib/rate/Pacer.js';
import { rateSettingsSchema } from '../../../lib/rate/settings.js';
import { ManualClock } from '../../support/manualClock.js';
import { MemorySlots } from '../../support/memorySlots.js';

// Issue 26 item 5: below one send per slot the pacer admitted more than the configured rate
// (`max(1, floor(rate × slotMs / 1000))`: 1/s with 500 ms slots admitted 2/s, 3/s became 2/s).

/**
 * Callers that always want to send: each asks for a token; an admitted one is counted at the time it
 * was admitted, a refused one comes back at its `retryAt`. The fake clock moves only by the pacer's own
 * in-memory waits and by the refusals' `retryAt`.
 */
const admittedOver = async (
  perSecond: number,
  options: { slotMs?: number; maxWaitMs?: number; callers?: number; seconds?: number } = {},
) => {
  // The window starts on a second (so on a slot boundary): 20 s is exactly 20 s of slots.
  const clock = new ManualClock(Date.parse('2026-12-02T00:00:00Z'));
  const start = clock.now();
  const end = start + (options.seconds ?? 20) * 1000;
  const slots = new MemorySlots();
  const pacer = new Pacer({
    slots,
    settings: rateSettingsSchema().parse({
      transports: { rest: { perSecond, ...(options.slotMs ? { slotMs: options.slotMs } : {}) } },
      maxWaitMs: options.maxWaitMs ?? 2_000,
    }),
    now: () => clock.now(),
    sleep: async (ms) => clock.advance(ms),
  });
  const admittedAt: number[] = [];
  const callers = options.callers ?? 1;
  // One caller at a time in fake time (the clock is shared): the callers take turns.
  const nextTry = Array.from({ length: callers }, () => start);
  for (;;) {
    const who = nextTry.indexOf(Math.min(...nextTry));
    if (nextTry[who]! > clock.now()) clock.set(nextTry[who]!);
    if (clock.now() >= end) break;
    const answer = await pacer.acquire('rest', 'any');
    if (answer.ok) {
      if (clock.now() < end) admittedAt.push(clock.now());
      nextTry[who] = clock.now();
    } else nextTry[who] = Math.max(answer.retryAt, clock.now() + 1);
  }
  return { admitted: admittedAt.length, admittedAt, writes: slots.writes };
};

describe('pacing below and around one send per slot (20 s of fake clock)', () => {
  it.each([
    { perSecond: 0.5, slotMs: 500 },
    { perSecond: 1, slotMs: 500 },
    { perSecond: 3, slotMs: 500 },
    { perSecond: 0.5, slotMs: 1000 },
    { perSecond: 3, slotMs: 200 },
    { perSecond: 7.5, slotMs: 500 },
  ])('admits $perSecond/s with $slotMs ms slots: rate × 20 s, ±1', async ({ perSecond, slotMs }) => {
    // Act
    const { admitted, admittedAt } = await admittedOver(perSecond, { slotMs });
    // Assess: within one send of the configured rate over the window, never more.
    expect(Math.abs(admitted - perSecond * 20)).toBeLessThanOrEqual(1);
    // No second of the run admits more than the rate allows (rounded up).
    const perSecondCounts = new Map<number, number>();
    for (const at of admittedAt) {
      const second = Math.floor(at / 1000);
      perSecondCounts.set(second, (perSecondCounts.get(second) ?? 0) + 1);
    }
    expect(Math.max(...perSecondCounts.values())).toBeLessThanOrEqual(Math.ceil(perSecond));
  });

  it('several callers of one environment share the same rate', async () => {
    const { admitted } = await admittedOver(3, { slotMs: 500, callers: 4 });
    expect(Math.abs(admitted - 60)).toBeLessThanOrEqual(1);
  });

  it('with no in-memory wait, a refused caller is sent back to a slot that has credit', async () => {
    const { admitted, writes } = await admittedOver(0.5, { slotMs: 500, maxWaitMs: 0 });
    expect(Math.abs(admitted - 10)).toBeLessThanOrEqual(1);
    // Slots without credit are skipped, not written: about one write per admitted send.
    expect(writes).toBeLessThanOrEqual(admitted + 2);
  });

  it('slot credits telescope: any run of slots sums to within one of rate × time', () => {
    for (const rate of [0.1, 0.5, 1, 1.5, 3, 14, 2 / 3, 49.99]) {
      for (const slotMs of [50, 200, 500, 1000]) {
        const first = Math.floor(Date.parse('2026-12-02T00:00:00Z') / slotMs) + 7;
        let sum = 0;
        const n = Math.ceil(60_000 / slotMs);
        for (let s = first; s < first + n; s += 1) {
          const credit = slotCredit(s, rate, slotMs);
          expect(credit).toBeGreaterThanOrEqual(0);
          sum += credit;
        }
        expect(Math.abs(sum - (rate * n * slotMs) / 1000)).toBeLessThan(1.0000001);
      }
    }
    // A tenant's perMinute over 60 s slots is exact in every slot.
    for (const perMinute of [1, 2, 3, 7, 600])
      for (let s = 29_000_000; s < 29_000_050; s += 1)
        expect(slotCredit(s, perMinute / 60, 60_000)).toBe(perMinute);
  });

  it('AIMD can bring the pace below one send per slot', async () => {
    const clock = new ManualClock(Date.parse('2026-12-02T00:00:00Z'));
    const pacer = new Pacer({
      slots: new MemorySlots(),
      settings: rateSettingsSchema().parse({
        transports: { rest: { perSecond: 2, floorPerSecond: 0.25 } },
        maxWaitMs: 0,
      }),
      now: () => clock.now(),
      sleep: async (ms) => clock.advance(ms),
    });
    await pacer.acquire('rest', 't');
    for (let i = 0; i < 4; i += 1) {
      pacer.observe('rest', { kind: 'retryable', reason: 'http_429' });
      clock.advance(1_000);
    }
    expect(pacer.rateOf('rest')).toBe(0.25);
    let admitted = 0;
    const end = clock.now() + 20_000;
    while (clock.now() < end) {
      const answer = await pacer.acquire('rest', 't');
      if (answer.ok) admitted += 1;
      clock.set(answer.ok ? clock.now() + 1 : Math.max(answer.retryAt, clock.now() + 1));
    }
    // 0.25/s for 20 s: 5 (the old rule admitted one per 500 ms slot, 40).
    expect(admitted).toBeGreaterThanOrEqual(4);
    expect(admitted).toBeLessThanOrEqual(6);
  });
});

describe('an unspent token goes back', () => {
  it('a refunded token serves the next caller in the same slot, without a write', async () => {
    const clock = new ManualClock(Date.parse('2026-12-02T00:00:00Z'));
    const slots = new MemorySlots();
    const pacer = new Pacer({
      slots,
      settings: rateSettingsSchema().parse({
        transports: { rest: { perSecond: 2, slotMs: 1000 } },
        maxWaitMs: 0,
      }),
      now: () => clock.now(),
    });
    const first = await pacer.acquire('rest', 't');
    const second = await pacer.acquire('rest', 't');
    expect(first.ok && second.ok).toBe(true);
    expect((await pacer.acquire('rest', 't')).ok).toBe(false);
    if (second.ok) pacer.refund(second.tokens);
    const writes = slots.writes;
    expect((await pacer.acquire('rest', 't')).ok).toBe(true);
    expect(slots.writes).toBe(writes);
    // A token whose slot has passed is not reused: a refund never raises the pace.
    const late = await (async () => {
      clock.advance(1_000);
      const t = await pacer.acquire('rest', 't');
      clock.advance(1_000);
      return t;
    })();
    if (late.ok) pacer.refund(late.tokens);
    expect((await pacer.acquire('rest', 't')).ok).toBe(true);
    expect((await pacer.acquire('rest', 't')).ok).toBe(true);
    expect((await pacer.acquire('rest', 't')).ok).toBe(false);
  });

  it('a tenant token is handed back when the transport pace refuses', async () => {
    const clock = new ManualClock(Date.parse('2026-12-02T00:00:10Z'));
    const pacer = new Pacer({
      slots: new MemorySlots(),
      settings: rateSettingsSchema().parse({
        transports: { rest: { perSecond: 1, slotMs: 1000 } },
        tenants: { acme: { perMinute: 2 } },
        maxWaitMs: 0,
      }),
      now: () => clock.now(),
    });
    expect((await pacer.acquire('rest', 'acme')).ok).toBe(true);
    // The transport's one token this second is gone: refused, and the tenant's token is kept for later.
    expect((await pacer.acquire('rest', 'acme')).ok).toBe(false);
    clock.advance(1_000);
    expect((await pacer.acquire('rest', 'acme')).ok).toBe(true);
  });
});
