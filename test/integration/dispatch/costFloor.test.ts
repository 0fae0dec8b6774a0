import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CapacityMeter } from '../../../bench/CapacityMeter.js';
import { UriAttachmentStore } from '../../../lib/attachments/AttachmentStore.js';
import { dynamoDocumentClient } from '../../../lib/aws/clients.js';
import { Dispatcher } from '../../../lib/dispatch/Dispatcher.js';
import { createSqsHandler } from '../../../lib/dispatch/sqsHandler.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoGateFacts } from '../../../lib/ledger/DynamoGateFacts.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { DynamoSuppressionList } from '../../../lib/ledger/DynamoSuppressionList.js';
import { localSealer } from '../../../lib/seal/IntentSealer.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { FileTemplateStore } from '../../../lib/templates/FileTemplateStore.js';
import { CapturingLogger, CONTENT_KEY, restTransports } from '../../support/dispatchHarness.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { labelOf } from '../../support/evidenceLabels.js';
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

const sqsEvent = (bodies: string[]): SQSEvent => ({
  Records: bodies.map((body, i) => ({
    messageId: `m-${i}`,
    receiptHandle: `rh-${i}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(clock.now()),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(clock.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:intake',
    awsRegion: 'us-east-1',
  })),
});

describe('the protocol floor on the happy path', () => {
  it('a batch of 10 happy notifications: the claim (as dispatching) and the outcome — 2 writes and 2 write units each — plus one read request for the whole batch', async () => {
    // Prepare: every client the dispatcher uses goes through one capacity meter
    const { raw, endpoint } = localDynamo();
    const [ledgerTable, suppressionTable] = await Promise.all([
      createLedgerTable(raw, 'floor'),
      createSuppressionTable(raw),
    ]);
    const doc = dynamoDocumentClient({ region: 'us-east-1', endpoint });
    const meter = new CapacityMeter();
    meter.attach(doc);
    const dispatcher = new Dispatcher({
      ledger: new DynamoLedger(doc, ledgerTable),
      suppressions: new DynamoSuppressionList(doc, suppressionTable),
      gateFacts: new DynamoGateFacts(doc, { ledger: ledgerTable, suppression: suppressionTable }),
      renderer: new FileTemplateStore(),
      transports: restTransports(sim),
      attachments: new UriAttachmentStore(),
      purposes: new PurposeRegistry(),
      clock,
      contentHashKey: CONTENT_KEY,
      sealer: localSealer(Buffer.from(TEST_SEAL_KEY, 'utf8')),
      workerId: 'dispatch:floor',
      leaseMs: 60_000,
      logger: new CapturingLogger(),
    });
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
    const { raw, endpoint } = localDynamo();
    const [ledgerTable, suppressionTable] = await Promise.all([
      createLedgerTable(raw, 'floor'),
      createSuppressionTable(raw),
    ]);
    const doc = dynamoDocumentClient({ region: 'us-east-1', endpoint });
    const suppressions = new DynamoSuppressionList(doc, suppressionTable);
    await suppressions.suppress('acme-games', 'player-gone', 'email', 'hard_bounce');
    const dispatcher = new Dispatcher({
      ledger: new DynamoLedger(doc, ledgerTable),
      suppressions,
      gateFacts: new DynamoGateFacts(doc, { ledger: ledgerTable, suppression: suppressionTable }),
      renderer: new FileTemplateStore(),
      transports: restTransports(sim),
      attachments: new UriAttachmentStore(),
      purposes: new PurposeRegistry(),
      clock,
      contentHashKey: CONTENT_KEY,
      sealer: localSealer(Buffer.from(TEST_SEAL_KEY, 'utf8')),
      workerId: 'dispatch:floor',
      leaseMs: 60_000,
      logger: new CapturingLogger(),
    });
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
