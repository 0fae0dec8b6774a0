import { describe, expect, it } from 'vitest';
import { protectCountryRules, protectedSmsCountries } from '../../../infra/constructs/smsProtect.js';
import { checkCountry, countryOf } from '../../../lib/domain/countryRules.js';
import { isThrottle, onSuccess, onThrottle, slotCredit, slotOf } from '../../../lib/domain/pacing.js';
import { purposePolicySchema } from '../../../lib/domain/purposes.js';
import { decideBreaker, freshWindowStart, windowStartOf } from '../../../lib/domain/spendBreaker.js';
import { canTransition } from '../../../lib/domain/states.js';
import { maxConcurrencyFor, rateSettingsSchema } from '../../../lib/rate/settings.js';

describe('SMS country rules (libphonenumber-js)', () => {
  it('reads the country from the E.164 number, telling +1 countries apart', () => {
    expect(countryOf('+12025550123')).toBe('US');
    expect(countryOf('+16135550123')).toBe('CA');
    expect(countryOf('+4915123456701')).toBe('DE');
    expect(countryOf('+2348031234567')).toBe('NG');
  });

  it('refuses a country off the list and a number whose country cannot be told; allows any without a list', () => {
    expect(checkCountry(['US', 'GB'], '+2348031234567')).toEqual({
      allowed: false,
      country: 'NG',
      why: 'country_not_allowed',
    });
    // +1 555 belongs to no NANP country's ranges: it could be a Caribbean premium range.
    expect(checkCountry(['US'], '+15555550123')).toMatchObject({ allowed: false, country: undefined });
    expect(checkCountry(['US'], '+12025550123')).toEqual({ allowed: true, country: 'US' });
    expect(checkCountry(undefined, '+2348031234567')).toEqual({ allowed: true, country: 'NG' });
  });

  it('purpose settings are validated: ISO codes only, a breaker needs a threshold', () => {
    const base = {
      purpose: 'otp',
      policyVersion: 'otp/1',
      templateRevisionInKey: false,
      expiryRequired: true,
      maxAttempts: 2,
      ambiguityDeadlineSeconds: 600,
      defaultDelivery: 'all',
      attachments: 'forbidden',
      retentionDays: 30,
    };
    expect(purposePolicySchema().safeParse({ ...base, smsCountries: ['uk'] }).success).toBe(false);
    expect(purposePolicySchema().safeParse({ ...base, smsSpendBreaker: {} }).success).toBe(false);
    expect(
      purposePolicySchema().parse({ ...base, smsSpendBreaker: { maxSends: 100 } }).smsSpendBreaker,
    ).toEqual({
      maxSends: 100,
      windowSeconds: 3600,
      cooldownSeconds: 900,
    });
  });

  it('the protect configuration allows the union of the purposes’ countries and blocks the rest', () => {
    expect(protectedSmsCountries([{}, {}])).toBeUndefined();
    expect(protectedSmsCountries([{ smsCountries: ['GB', 'DE'] }, { smsCountries: ['DE', 'US'] }])).toEqual([
      'DE',
      'GB',
      'US',
    ]);
    const rules = protectCountryRules(['DE', 'GB']);
    expect(rules.filter((r) => r.protectStatus === 'ALLOW').map((r) => r.countryCode)).toEqual(['DE', 'GB']);
    expect(rules.find((r) => r.countryCode === 'NG')).toEqual({ countryCode: 'NG', protectStatus: 'BLOCK' });
  });
});

describe('pacing rules', () => {
  const limits = { ceiling: 50, floor: 5, decreaseEveryMs: 1000 };

  it('a throttle halves the pace, once per second at most, never below the floor', () => {
    const start = { rate: 50, lastDecreaseAt: Number.NEGATIVE_INFINITY };
    const once = onThrottle(start, limits, 10_000);
    expect(once.rate).toBe(25);
    expect(onThrottle(once, limits, 10_500).rate).toBe(25);
    let state = once;
    for (let t = 11_000; t < 20_000; t += 1000) state = onThrottle(state, limits, t);
    expect(state.rate).toBe(5);
  });

  it('each success adds a hundredth of the ceiling back, up to the ceiling', () => {
    let state = { rate: 25, lastDecreaseAt: 0 };
    for (let i = 0; i < 10; i += 1) state = onSuccess(state, limits);
    expect(state.rate).toBeCloseTo(30);
    for (let i = 0; i < 100; i += 1) state = onSuccess(state, limits);
    expect(state.rate).toBe(50);
  });

  it('slots admit rate × slot length sends, a fraction carried to the next slots', () => {
    expect(slotCredit(5001, 50, 200)).toBe(10);
    // 0.5/s with 200 ms slots: 0.1 a slot, one send in every tenth slot.
    expect(Array.from({ length: 10 }, (_, i) => slotCredit(5000 + i, 0.5, 200))).toEqual([
      0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    ]);
    // 3/s with 500 ms slots: 1.5 a slot, alternately 1 and 2.
    expect([0, 1, 2, 3].map((i) => slotCredit(4000 + i, 3, 500))).toEqual([1, 2, 1, 2]);
    expect(slotOf(1_000_399, 200)).toBe(5001);
  });

  it('recognises the throttle answers of every adapter', () => {
    for (const reason of ['http_429', 'rate_limited', 'rate_limit_exceeded', 'twilio_20429', 'sendgrid_429'])
      expect(isThrottle({ kind: 'retryable', reason })).toBe(true);
    expect(isThrottle({ kind: 'retryable', reason: 'TooManyRequestsException' })).toBe(true);
    expect(isThrottle({ kind: 'retryable', reason: 'ThrottlingException' })).toBe(true);
    expect(isThrottle({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' })).toBe(false);
    expect(isThrottle({ kind: 'rejected', reason: 'http_429' })).toBe(false);
  });

  it('maximum concurrency follows the slowest pace', () => {
    const settings = rateSettingsSchema().parse({
      transports: { ses: { perSecond: 14 }, rest: { perSecond: 200 } },
    });
    expect(maxConcurrencyFor(settings, { recordsAtOnce: 5, sendLatencyMs: 300, cap: 1000 })).toBe(2);
    const fast = rateSettingsSchema().parse({ transports: { rest: { perSecond: 500 } } });
    expect(maxConcurrencyFor(fast, { recordsAtOnce: 5, sendLatencyMs: 300, cap: 1000 })).toBe(31);
    expect(
      maxConcurrencyFor(rateSettingsSchema().parse({}), { recordsAtOnce: 5, sendLatencyMs: 300, cap: 9 }),
    ).toBe(undefined);
  });

  it('a paced claim may wait in retry_wait, and a refused retry may end blocked', () => {
    expect(canTransition('claimed', 'retry_wait')).toBe(true);
    expect(canTransition('retry_wait', 'blocked')).toBe(true);
  });
});

describe('spend breaker rules', () => {
  const facts = { now: 7_200_500, windowStart: windowStartOf(7_200_500, 3600), maxSends: 3 };

  it('windows are aligned to the epoch', () => {
    expect(facts.windowStart).toBe(7_200_000);
  });

  it('no item, or another window: start a new one; a full window trips; open refuses until the cool-down', () => {
    expect(decideBreaker(undefined, facts)).toEqual({ kind: 'new_window' });
    expect(decideBreaker({ state: 'closed', windowStart: 3_600_000, sends: 3 }, facts)).toEqual({
      kind: 'new_window',
    });
    expect(decideBreaker({ state: 'closed', windowStart: 7_200_000, sends: 3 }, facts)).toEqual({
      kind: 'trip',
    });
    expect(
      decideBreaker({ state: 'open', windowStart: 7_200_000, sends: 3, openUntil: 7_300_000 }, facts),
    ).toEqual({
      kind: 'open',
      until: 7_300_000,
    });
    expect(
      decideBreaker({ state: 'open', windowStart: 7_200_000, sends: 3, openUntil: 7_000_000 }, facts),
    ).toEqual({
      kind: 'close_and_count',
    });
    expect(decideBreaker({ state: 'closed', windowStart: 7_200_000, sends: 1 }, facts)).toEqual({
      kind: 'retry',
    });
  });

  it('the window never goes back: a lagging clock counts in the newer window, or trips it', () => {
    // The item's window started an hour after this clock's (a dispatcher with a later clock).
    const newer = facts.windowStart + 3_600_000;
    expect(decideBreaker({ state: 'closed', windowStart: newer, sends: 1 }, facts)).toEqual({
      kind: 'retry',
    });
    expect(decideBreaker({ state: 'closed', windowStart: newer, sends: 3 }, facts)).toEqual({ kind: 'trip' });
    expect(freshWindowStart({ state: 'open', windowStart: newer }, facts.windowStart)).toBe(newer);
    expect(freshWindowStart({ state: 'open', windowStart: 3_600_000 }, facts.windowStart)).toBe(7_200_000);
    expect(freshWindowStart(undefined, facts.windowStart)).toBe(7_200_000);
  });
});
