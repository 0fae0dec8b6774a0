import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BUILT_IN_PURPOSES } from '../../../lib/domain/purposes.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { SpendBreaker } from '../../../lib/rate/SpendBreaker.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { type RateWorkerSpec, rateWorker, type ThreadReport } from '../../support/rateWorld.js';

// Issue 26 item 6: admission ran before the claim, so every duplicate publish or redelivery whose claim
// then conflicted took a pace token and a spend-breaker count. A storm of duplicates tripped the breaker
// with no real send, and the legitimate SMS then ended `blocked: spend_breaker_open` (terminal).
// Real servers: DynamoDB Local (global setup) and the provider simulator (a test double) over HTTP; the
// storm runs real concurrent workers, one worker thread per execution environment.

const reset = BUILT_IN_PURPOSES.find((p) => p.purpose === 'password-reset')!;
const GUARDED = [{ ...reset, smsSpendBreaker: { maxSends: 10, windowSeconds: 3600, cooldownSeconds: 600 } }];

let sim: RunningProviderSimulator;
let spec: (workerId: string, extra?: Partial<RateWorkerSpec>) => RateWorkerSpec;
let ledger: DynamoLedger;
let breaker: SpendBreaker;

beforeAll(async () => {
  sim = await startProviderSimulator();
});
afterAll(async () => {
  await sim.stop();
});
beforeEach(async () => {
  const { raw, doc, endpoint } = localDynamo();
  const table = await createLedgerTable(raw, 'storm');
  const suppressionTable = await createSuppressionTable(raw);
  ledger = new DynamoLedger(doc, table);
  breaker = new SpendBreaker(doc, table, { workerId: 'test' });
  spec = (workerId, extra = {}) => ({
    endpoint,
    table,
    suppressionTable,
    simUrl: sim.url,
    workerId,
    ...extra,
  });
  sim.reset();
});

/** `bodies` dealt round-robin to `threads` worker threads, `concurrency` records each. */
const runThreads = (bodies: string[], threads: number, concurrency: number, extra: Partial<RateWorkerSpec>) =>
  Promise.all(
    Array.from(
      { length: threads },
      (_, t) =>
        new Promise<ThreadReport>((resolve, reject) => {
          const worker = new Worker(new URL('../../support/rateWorker.mjs', import.meta.url), {
            workerData: {
              spec: spec(`dispatch:storm-${t}`, extra),
              bodies: bodies.filter((_, i) => i % threads === t),
              concurrency,
            },
          });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  );

const sms = (eventId: string, phone: string, now = Date.now()) =>
  JSON.stringify(resetIntent({ eventId, channels: ['sms'], recipient: { ref: `r-${eventId}`, phone } }, now));

describe('a duplicate storm is not counted by the spend breaker or the pacer', () => {
  it('10 SMS published 10 times each over three concurrent workers: all 10 sent, none blocked, 10 counted', async () => {
    // Prepare: the breaker allows exactly the 10 real SMS this hour; each is published ten times
    // (a publisher retrying, redeliveries), interleaved.
    const real = Array.from({ length: 10 }, (_, i) =>
      sms(`storm-${i}`, `+49151234560${String(i).padStart(2, '0')}`),
    );
    const storm = Array.from({ length: 10 }, () => real).flat();
    // Act
    // A duplicate that finds its row in flight comes back after the lease: a short one keeps the test short.
    const reports = await runThreads(storm, 3, 8, { purposes: GUARDED, leaseMs: 2_000 });
    // Assess: one provider call per real SMS, every row accepted, the breaker counted ten and is closed.
    const sent = sim.requests().filter((r) => r.outcome === 'accepted');
    expect(sent).toHaveLength(10);
    const keys = [...new Set(reports.flatMap((r) => r.channels.map((c) => c.dedupeKey)))];
    expect(keys).toHaveLength(10);
    const rows = await Promise.all(keys.map((k) => ledger.get(k)));
    expect(rows.map((r) => r?.state)).toEqual(Array(10).fill('accepted'));
    expect(reports.flatMap((r) => r.channels).filter((c) => c.state === 'blocked')).toEqual([]);
    expect(await breaker.read('password-reset', 'DE')).toMatchObject({ state: 'closed', sends: 10 });
    // The breaker still holds its threshold: an eleventh real SMS is refused.
    const { dispatcher } = rateWorker(spec('dispatch:after', { purposes: GUARDED }), {
      now: () => Date.now(),
    });
    const eleventh = await dispatcher.handle(sms('storm-11', '+4915123456011'), { messageId: 'm11' });
    expect(eleventh.channels[0]).toMatchObject({ state: 'blocked' });
    expect((await ledger.get(eleventh.channels[0]!.dedupeKey))?.history.at(-1)?.why).toBe(
      'spend_breaker_open:DE',
    );
  }, 60_000);

  it('duplicates of a sent message hand their pace tokens back: the next distinct sends are not paced', async () => {
    // Prepare: ten sends per one-second slot, no in-memory wait, the clock stopped inside one slot.
    const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000 + 100);
    const rate = { transports: { rest: { perSecond: 10, slotMs: 1000 } }, maxWaitMs: 0 };
    const { dispatcher } = rateWorker(spec('dispatch:pace-storm', { rate }), clock);
    const email = (id: string) =>
      JSON.stringify(
        resetIntent({ eventId: id, recipient: { ref: `r-${id}`, email: `${id}@example.com` } }, clock.now()),
      );
    // Act: one send, twenty duplicates of it, then nine distinct sends, all in the same slot.
    const first = await dispatcher.handle(email('pace-a'), { messageId: 'a' });
    const duplicates = [];
    for (let i = 0; i < 20; i += 1)
      duplicates.push(await dispatcher.handle(email('pace-a'), { messageId: `a${i}` }));
    const others = [];
    for (let i = 0; i < 9; i += 1)
      others.push(await dispatcher.handle(email(`pace-${i}`), { messageId: `o${i}` }));
    // Assess: the duplicates sent nothing; the nine others used the slot's nine remaining tokens.
    expect(first.channels[0]).toMatchObject({ state: 'accepted' });
    expect(duplicates.every((d) => d.channels[0]?.action === 'already_final')).toBe(true);
    expect(others.map((o) => o.channels[0]?.state)).toEqual(Array(9).fill('accepted'));
    expect(sim.requests().filter((r) => r.outcome === 'accepted')).toHaveLength(10);
  });
});
