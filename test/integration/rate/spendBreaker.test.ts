import { beforeEach, describe, expect, it } from 'vitest';
import { windowStartOf } from '../../../lib/domain/spendBreaker.js';
import { SpendBreaker } from '../../../lib/rate/SpendBreaker.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';

// Issue 26 item 6, second half: `#windowStart <> :ws` let a dispatcher whose clock lags reset the
// count into an older window, so the newer window let more than `maxSends` through. DynamoDB Local:
// the rule lives in the conditional expressions.

const POLICY = { maxSends: 5, windowSeconds: 3600, cooldownSeconds: 600 };
// Just after a window boundary; a clock 400 ms behind is still in the previous window. (The cool-down
// is measured by each dispatcher's own clock, so a lag longer than the cool-down would shorten it:
// Lambda's clocks are NTP-disciplined, their skew is milliseconds, which is the case tested here.)
const NOW = windowStartOf(Date.parse('2026-12-02T10:10:00Z'), 3600) + 150;
const LAG = 400;

describe('spend breaker windows never go back', () => {
  let on: SpendBreaker;
  let lagging: SpendBreaker;
  let table: string;
  beforeEach(async () => {
    const { raw } = localDynamo();
    table = await createLedgerTable(raw, 'breaker');
    // Two dispatchers, each with its own client, as two Lambda environments would be.
    on = new SpendBreaker(localDynamo().doc, table, { workerId: 'dispatch:on-time' });
    lagging = new SpendBreaker(localDynamo().doc, table, { workerId: 'dispatch:lagging' });
  });

  it('at a window boundary, a dispatcher with a lagging clock counts in the newer window: at most maxSends', async () => {
    // Act: the two take turns, 20 SMS each, the lagging one still in the previous window.
    const answers: Array<{ who: string; ok: boolean }> = [];
    for (let i = 0; i < 20; i += 1) {
      answers.push({ who: 'on', ok: (await on.count('otp', 'DE', POLICY, NOW + i)).ok });
      answers.push({ who: 'lag', ok: (await lagging.count('otp', 'DE', POLICY, NOW - LAG + i)).ok });
    }
    // Assess
    const admitted = answers.filter((a) => a.ok).length;
    expect(admitted).toBe(POLICY.maxSends);
    const item = await on.read('otp', 'DE');
    expect(item).toMatchObject({ state: 'open', windowStart: windowStartOf(NOW, 3600), sends: 5 });
  });

  it('a lagging clock that sees the newer window first joins it instead of starting its own', async () => {
    // Prepare: the on-time dispatcher starts the window with one SMS.
    expect((await on.count('otp', 'DE', POLICY, NOW)).ok).toBe(true);
    // Act: the lagging one sends four, then the on-time one five more.
    const lag = [];
    for (let i = 0; i < 4; i += 1) lag.push((await lagging.count('otp', 'DE', POLICY, NOW - LAG)).ok);
    const late = [];
    for (let i = 0; i < 5; i += 1) late.push((await on.count('otp', 'DE', POLICY, NOW + 1)).ok);
    // Assess: 1 + 4 fill the window; the on-time dispatcher is refused (it opens the breaker).
    expect(lag).toEqual([true, true, true, true]);
    expect(late).toEqual([false, false, false, false, false]);
    expect(await on.read('otp', 'DE')).toMatchObject({
      windowStart: windowStartOf(NOW, 3600),
      state: 'open',
    });
  });

  it('concurrent dispatchers, half of them lagging, let at most maxSends through the window', async () => {
    const breakers = Array.from(
      { length: 6 },
      (_, i) => new SpendBreaker(localDynamo().doc, table, { workerId: `dispatch:${i}` }),
    );
    // Prepare: the window is open (an on-time SMS started it). Without it, a lagging dispatcher may
    // start the previous window first and the on-time one then moves it forward once: up to maxSends
    // in each of the two windows, which is the rule, but not the figure this test holds.
    const policy = { ...POLICY, maxSends: 20 };
    expect((await breakers[0]!.count('otp', 'GB', policy, NOW)).ok).toBe(true);
    // Act: 80 SMS at once from six dispatchers, every other one a clock in the previous window.
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        breakers[i % 6]!.count('otp', 'GB', policy, i % 2 === 0 ? NOW : NOW - LAG),
      ),
    );
    // Assess
    expect(answers.filter((a) => a.ok).length).toBe(policy.maxSends - 1);
    expect(await breakers[0]!.read('otp', 'GB')).toMatchObject({ sends: policy.maxSends, state: 'open' });
    // And the next window (by the on-time clock) starts a fresh count.
    const next = await breakers[0]!.count('otp', 'GB', { ...POLICY, cooldownSeconds: 1 }, NOW + 3_600_000);
    expect(next.ok).toBe(true);
  });

  it('after the cool-down the fresh count stays in the newer window, whatever a lagging clock says', async () => {
    // Prepare: fill the window and open the breaker with a 60 s cool-down.
    const policy = { ...POLICY, cooldownSeconds: 60 };
    for (let i = 0; i < 6; i += 1) await on.count('otp', 'US', policy, NOW);
    expect(await on.read('otp', 'US')).toMatchObject({ state: 'open' });
    // Act: the on-time dispatcher closes it after the cool-down; then a clock an hour behind (in the
    // previous window, past its own view of the cool-down) sends more.
    expect((await on.count('otp', 'US', policy, NOW + 61_000)).ok).toBe(true);
    for (let i = 0; i < 6; i += 1) await lagging.count('otp', 'US', policy, NOW - 3_600_000 + 62_000 + i);
    const item = await on.read('otp', 'US');
    expect(item).toMatchObject({ windowStart: windowStartOf(NOW, 3600), sends: 5, state: 'open' });
  });
});
