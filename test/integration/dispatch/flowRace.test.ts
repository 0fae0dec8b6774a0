import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { pdfAttachment } from '../../support/dispatchHarness.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { healthReportIntent } from '../../support/fixtures.js';

// Real servers: DynamoDB Local (global setup), the provider simulator over HTTP on 127.0.0.1, and two
// dispatch workers in their own threads with their own DynamoDB clients (test/support/cancelRace.ts).
let sim: RunningProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator();
});
afterAll(async () => {
  await sim.stop();
});

const NOTIFICATIONS = 40;

const runWorker = (
  endpoint: string,
  table: string,
  suppressionTable: string,
  workerId: string,
  bodies: string[],
) =>
  new Promise<void>((resolve, reject) => {
    const worker = new Worker(new URL('../../support/cancelRaceWorker.mjs', import.meta.url), {
      workerData: { endpoint, table, suppressionTable, simUrl: sim.url, workerId, bodies },
    });
    worker.once('message', () => resolve());
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker exited ${code}`))));
  });

describe('a fallback intent and an "all" intent for one notification, processed concurrently (issue 26 item 10c)', () => {
  it('40 health reports, each published once as fallback and once as all, on two concurrent workers: every email is sent once and no SMS is sent while email is fine', async () => {
    // Prepare: each worker holds one intent of every notification, alternating kinds, so both intents
    // of one notification are in flight at once; every email answer takes 20 ms more
    const { raw, doc, endpoint } = localDynamo();
    const table = await createLedgerTable(raw, 'flowrace');
    const suppressionTable = await createSuppressionTable(raw);
    sim.addFault({ match: { channel: 'email' }, fault: 'delay', delayMs: 20, times: 100_000 });
    const attachments = [pdfAttachment()];
    const report = (i: number, delivery: 'fallback' | 'all') =>
      JSON.stringify(
        healthReportIntent({
          eventId: `report-race-${i}`,
          recipient: {
            ref: `patient-${i}`,
            email: `p${i}@example.com`,
            phone: `+1555555${String(1000 + i)}`,
          },
          attachments,
          delivery,
        }),
      );
    const first: string[] = [];
    const second: string[] = [];
    for (let i = 0; i < NOTIFICATIONS; i++) {
      const kinds: Array<'fallback' | 'all'> = i % 2 === 0 ? ['fallback', 'all'] : ['all', 'fallback'];
      first.push(report(i, kinds[0]!));
      second.push(report(i, kinds[1]!));
    }
    // Act
    await Promise.all([
      runWorker(endpoint, table, suppressionTable, 'dispatch:w0', first),
      runWorker(endpoint, table, suppressionTable, 'dispatch:w1', second),
    ]);
    // Assess: one channel active per notification (invariant 6)
    const requests = sim.requests();
    expect(requests.filter((r) => r.channel === 'sms')).toHaveLength(0);
    const emails = sim.messages().filter((m) => m.channel === 'email');
    expect(emails).toHaveLength(NOTIFICATIONS);
    const ledger = new DynamoLedger(doc, table);
    for (let i = 0; i < NOTIFICATIONS; i++) {
      const key = `clinic:health-report:report-race-${i}:patient-${i}`;
      expect((await ledger.get(`${key}:email`))?.state).toBe('accepted');
      expect(await ledger.get(`${key}:sms`)).toBeUndefined();
    }
  }, 120_000);
});
