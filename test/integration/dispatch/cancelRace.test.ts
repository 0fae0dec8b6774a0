import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../lib/domain/clock.js';
import { hashKey } from '../../../lib/domain/keys.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../../lib/ledger/DynamoOperatorQueries.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { cancelNotifications } from '../../../lib/publish/cancelNotifications.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { receiptIntent } from '../../support/fixtures.js';

// Real servers: DynamoDB Local (global setup), the provider simulator over HTTP on 127.0.0.1, and four
// dispatch workers in their own threads with their own DynamoDB clients.
let sim: RunningProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator();
});
afterAll(async () => {
  await sim.stop();
});

const RECIPIENTS = 100;
const WORKERS = 4;
const EVENT = 'pay_fanout-77';

const entry = (row: DeliveryRecord, state: string) => row.history.find((e) => e.s === state);

describe('a cancel racing a fan-out', () => {
  it('100 recipients on 4 concurrent workers, cancelled mid-way: no recipient is sent after the cancel committed, and each row says which came first', async () => {
    // Prepare: one business event fanned out to 100 recipients; every provider call takes 15 ms more
    const { raw, doc, endpoint } = localDynamo();
    const table = await createLedgerTable(raw, 'cancelrace');
    const suppressionTable = await createSuppressionTable(raw);
    const ledger = new DynamoLedger(doc, table);
    const queries = new DynamoOperatorQueries(doc, table);
    sim.addFault({ match: { channel: 'email' }, fault: 'delay', delayMs: 15, times: 100_000 });
    const bodies = Array.from({ length: RECIPIENTS }, (_, i) =>
      JSON.stringify(
        receiptIntent({
          eventId: EVENT,
          recipient: { ref: `player-${i}`, email: `p${i}@example.com` },
        }),
      ),
    );
    // Act: the workers start together; the refund is committed once about a quarter has been sent
    const workers = Array.from(
      { length: WORKERS },
      (_, w) =>
        new Promise<{ workerId: string }>((resolve, reject) => {
          const worker = new Worker(new URL('../../support/cancelRaceWorker.mjs', import.meta.url), {
            workerData: {
              endpoint,
              table,
              suppressionTable,
              simUrl: sim.url,
              workerId: `dispatch:w${w}`,
              bodies: bodies.filter((_, i) => i % WORKERS === w),
            },
          });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    );
    while (sim.requests().length < RECIPIENTS / 4) await new Promise((r) => setTimeout(r, 2));
    const report = await cancelNotifications(
      { ledger, queries, clock: systemClock },
      { tenant: 'acme-games', eventId: EVENT, reason: 'payment refunded', operator: 'ana', waitMs: 20_000 },
    );
    await Promise.all(workers);
    // Assess
    const rows = (await queries.findByEvent(EVENT)).filter((r) => r.kind === 'delivery');
    expect(rows).toHaveLength(RECIPIENTS);
    const sentKeys = new Set(sim.messages().map((m) => m.idempotencyKey));
    const accepted = rows.filter((r) => r.state === 'accepted');
    const cancelled = rows.filter((r) => r.state === 'cancelled');
    expect(accepted.length + cancelled.length).toBe(RECIPIENTS);
    // The race was a race: some recipients were sent before the cancel, some stopped by it.
    expect(accepted.length).toBeGreaterThan(0);
    expect(cancelled.length).toBeGreaterThan(0);
    // Exactly the accepted rows reached the provider, once each.
    expect(sim.messages()).toHaveLength(accepted.length);
    for (const row of accepted) expect(sentKeys.has(row.idempotencyKey)).toBe(true);
    for (const row of cancelled) expect(sentKeys.has(hashKey(row.pk))).toBe(false);
    // No recipient sent after the commit: every send's dispatching write precedes the committed cancel,
    // and every row that went dispatching after it was stopped.
    for (const row of accepted) expect(entry(row, 'dispatching')!.at).toBeLessThan(report.committedAt);
    for (const row of rows) {
      const dispatching = entry(row, 'dispatching');
      if (dispatching && dispatching.at >= report.committedAt) expect(row.state).toBe('cancelled');
    }
    // Each row says which came first.
    for (const row of cancelled)
      expect(row.history.at(-1)?.why).toMatch(
        /^cancelled:\*\/\*:by=operator:ana:(row_cancelled|marker_read_before_send):payment refunded$/,
      );
    const reported = new Map(report.rows.map((r) => [r.dedupeKey, r.outcome]));
    for (const row of accepted) {
      const said = reported.get(row.pk);
      // Claimed before the report looked: it says "too late" with the dispatching time.
      if (said) {
        expect(['too_late', 'cancel_too_late']).toContain(said.result);
        const since =
          said.result === 'too_late' ? said.since : said.result === 'cancel_too_late' ? said.handoffAt : 0;
        expect(since).toBe(entry(row, 'dispatching')!.at);
      }
    }
    for (const row of cancelled) {
      const said = reported.get(row.pk);
      if (said) expect(said.result).toBe('cancelled');
    }
    console.info(
      `cancel race: ${accepted.length} sent before the commit, ${cancelled.length} stopped, ${report.rows.length} rows in the report`,
    );
  }, 180_000);
});
