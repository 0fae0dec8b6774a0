import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CapacityMeter } from '../../../harness/CapacityMeter.js';
import { type LocalAdapters, localAdapters, restTransports } from '../../../harness/dispatcher.js';
import { sesEvidence } from '../../../harness/sesEvents.js';
import { sqsBatch } from '../../../harness/sqsEvents.js';
import { readStreamWrites } from '../../../harness/streamUnits.js';
import { dynamoDocumentClient } from '../../../lib/aws/clients.js';
import { Dispatcher } from '../../../lib/dispatch/Dispatcher.js';
import { createSqsHandler } from '../../../lib/dispatch/sqsHandler.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { CapturingLogger, CONTENT_KEY } from '../../support/dispatchHarness.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { labelOf, testLabelKeys } from '../../support/evidenceLabels.js';
import { resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { TEST_SEAL_KEY } from '../../support/sealKey.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1.
let sim: RunningProviderSimulator;
const clock = new ManualClock(Date.now());

beforeAll(async () => {
  sim = await startProviderSimulator();
});
afterAll(async () => {
  await sim.stop();
});

/** The dispatcher as functions/dispatch wires it (batch gate reads included), over the given tables. */
const floorDispatcher = (adapters: LocalAdapters) =>
  new Dispatcher({
    ...adapters,
    transports: restTransports(sim.url),
    clock,
    contentHashKey: CONTENT_KEY,
    workerId: 'dispatch:floor',
    logger: new CapturingLogger(),
  });

const tablesFor = async (prefix: string) => {
  const { raw, endpoint } = localDynamo();
  const [ledgerTable, suppressionTable] = await Promise.all([
    createLedgerTable(raw, prefix),
    createSuppressionTable(raw),
  ]);
  const doc = dynamoDocumentClient({ region: 'us-east-1', endpoint });
  return { endpoint, doc, ledgerTable, suppressionTable };
};

const sqsEvent = (bodies: string[]) => sqsBatch(bodies, { now: clock.now() });

describe('the protocol floor on the happy path', () => {
  it('a batch of 10 happy notifications: the claim (as dispatching) and the outcome — 2 writes and 2 write units each — plus one read request for the whole batch', async () => {
    // Prepare: every client the dispatcher uses goes through one capacity meter
    const { doc, ledgerTable, suppressionTable } = await tablesFor('floor');
    const adapters = localAdapters({ doc, ledgerTable, suppressionTable, sealKey: TEST_SEAL_KEY });
    const meter = new CapacityMeter();
    meter.attach(doc);
    const dispatcher = floorDispatcher(adapters);
    const handler = createSqsHandler(dispatcher, { concurrency: 5 });
    const bodies = Array.from({ length: 10 }, (_, i) =>
      JSON.stringify(
        resetIntent(
          { eventId: `floor-${i}`, recipient: { ref: `player-${i}`, email: `p${i}@example.test` } },
          clock.now(),
        ),
      ),
    );
    // Act
    const { value, totals } = await meter.measure(() => handler(sqsEvent(bodies)));
    // Assess
    expect(value.batchItemFailures).toEqual([]);
    expect(sim.requests().filter((r) => r.outcome === 'accepted')).toHaveLength(10);
    // Two row writes, the protocol floor: no `ev#<hash>` pointer, since every message's label carries its row key.
    expect(totals.writeRequests).toBe(20);
    expect(totals.writeUnits).toBe(20);
    expect(totals.readRequests).toBe(1);
    expect((totals.writeRequests + totals.readRequests) / 10).toBe(2.1);
    const row = await new DynamoLedger(doc, ledgerTable).get(
      'acme-games:password-reset:floor-0:player-0:email',
    );
    expect(row?.history.map((e) => e.s)).toEqual(['dispatching', 'accepted']);
    // What the provider was given to name the row in its events: the sealed label, and nothing readable.
    const sent = sim.messages().find((m) => m.idempotencyKey === row?.idempotencyKey);
    expect(sent?.body.tags).toEqual({ 'sendproof-key': labelOf(row!) });
  });

  it('a recipient suppressed in the batch read is written once, directly as suppressed, and never sent', async () => {
    // Prepare
    const { doc, ledgerTable, suppressionTable } = await tablesFor('floor');
    const adapters = localAdapters({ doc, ledgerTable, suppressionTable, sealKey: TEST_SEAL_KEY });
    await adapters.suppressions.suppress('acme-games', 'player-gone', 'email', 'hard_bounce');
    const dispatcher = floorDispatcher(adapters);
    sim.reset();
    const body = JSON.stringify(
      resetIntent(
        { eventId: 'floor-gone', recipient: { ref: 'player-gone', email: 'gone@example.test' } },
        clock.now(),
      ),
    );
    // Act
    await createSqsHandler(dispatcher, { concurrency: 5 })(sqsEvent([body]));
    // Assess
    const row = await new DynamoLedger(doc, ledgerTable).get(
      'acme-games:password-reset:floor-gone:player-gone:email',
    );
    expect(row?.history.map((e) => e.s)).toEqual(['suppressed']);
    expect(row?.history[0]?.why).toBe('suppressed:hard_bounce');
    expect(sim.requests()).toHaveLength(0);
  });
});

describe('a delivered notification, its evidence included, counted from the stream', () => {
  it('a delivered password reset costs 3 write units on the stream: claim 1, accepted 1, the Delivery fact 1 — the Send event of a row already accepted with that message id writes nothing', async () => {
    // Prepare: the ledger table's stream is read afterwards and every write on it billed by item size
    const { endpoint, doc, ledgerTable, suppressionTable } = await tablesFor('delivered');
    const adapters = localAdapters({ doc, ledgerTable, suppressionTable, sealKey: TEST_SEAL_KEY });
    const meter = new CapacityMeter();
    meter.attach(doc);
    const { ledger } = adapters;
    const dispatcher = floorDispatcher(adapters);
    const recorder = new EvidenceRecorder({
      labels: testLabelKeys,
      ledger,
      store: new DynamoEvidenceStore(doc, ledgerTable),
      suppressions: adapters.suppressions,
      purposes: new PurposeRegistry(),
      clock,
    });
    const n = 5;
    const bodies = Array.from({ length: n }, (_, i) =>
      JSON.stringify(
        resetIntent(
          {
            eventId: `reset-2026-12-02-${String(i).padStart(6, '0')}`,
            recipient: { ref: `player-${String(i).padStart(8, '0')}`, email: `d${i}@example.test` },
          },
          clock.now(),
        ),
      ),
    );
    // Act: dispatch, then SES's Send and Delivery events for each message (SES message ids as SES writes them)
    const { value, totals } = await meter.measure(async () => {
      const out = await createSqsHandler(dispatcher, { concurrency: 5 })(sqsEvent(bodies));
      const rows = await Promise.all(
        bodies.map((b) => {
          const intent = JSON.parse(b) as { eventId: string; recipient: { ref: string } };
          return ledger.get(`acme-games:password-reset:${intent.eventId}:${intent.recipient.ref}:email`);
        }),
      );
      const results: string[] = [];
      for (const row of rows) {
        for (const [eventType, extra] of [
          ['Send', {}],
          ['Delivery', { delivery: { timestamp: new Date(clock.now() + 900).toISOString() } }],
        ] as const) {
          const event = sesEvidence(row!, eventType, { labelSecret: CONTENT_KEY, at: clock.now(), extra });
          results.push((await recorder.record(event)).kind);
        }
      }
      return { out, rows, results };
    });
    // Assess
    expect(value.out.batchItemFailures).toEqual([]);
    expect(value.results).toEqual(Array.from({ length: n }, () => ['redundant', 'fact_recorded']).flat());
    const writes = await readStreamWrites(endpoint, ledgerTable);
    const perRow = value.rows.map((row) => writes.filter((w) => w.pk === row!.pk));
    for (const rowWrites of perRow) {
      expect(rowWrites.map((w) => w.units)).toEqual([1, 1, 1]);
      expect(Math.max(...rowWrites.map((w) => w.newSize))).toBeLessThanOrEqual(1024);
    }
    // Nothing else on the table: no `ev#` item for events whose row was accepted and named by its label.
    expect(writes.reduce((sum, w) => sum + w.units, 0)).toBe(3 * n);
    // The SDK's meter agrees (it also counts writes the stream cannot show, such as refused conditions).
    expect(totals.writeUnits).toBe(3 * n);
    const delivered = await ledger.get(value.rows[0]!.pk);
    expect(delivered?.delivery?.status).toBe('delivered');
    expect(delivered?.state).toBe('accepted');
  });
});
