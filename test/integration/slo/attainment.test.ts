import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsRecord as lambdaSqsRecord } from '../../../harness/sqsEvents.js';
import { DuckDbAudit } from '../../../lib/archive/DuckDbAudit.js';
import { loadNamedQueries } from '../../../lib/archive/namedQueries.js';
import { createSqsHandler } from '../../../lib/dispatch/sqsHandler.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { parseLambdaEvent } from '../../../lib/evidence/events.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { SLO_METRIC, sloMetricSets } from '../../../lib/slo/metrics.js';
import { createSloReadModel, type PurposeAttainment } from '../../../lib/slo/readModel.js';
import { createHarness, type Harness, restTransports } from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { sesEventBridgeEvent, testLabelKeys } from '../../support/evidenceLabels.js';
import { MARKERS, receiptIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { startArchiveStream, startOutcomeStream } from '../../support/outcomeStream.js';
import { startLocalS3 } from '../archive/localS3.js';
import { pushEvidenceOnly } from '../reconcile/support.js';

// Real components: the SQS handler and dispatcher on DynamoDB Local, the provider simulator over HTTP,
// the archiver on the ledger's stream writing to fauxqs S3 and its mirror, DuckDB running
// queries/slo-attainment.sql, and the stream consumer's SLO observations (what becomes EMF metrics).
// Delays are injected where they happen in production: a message waits in the queue (its SentTimestamp
// is old when the dispatcher receives it), a provider reports delivery late; the duplicate is a receipt
// whose row disappeared (as after its TTL) and whose intent was published again.
const MINUTE = 60_000;
const clock = new ManualClock(Date.parse('2026-11-30T12:00:00Z'));
const start = clock.now();
let sim: RunningProviderSimulator;
let h: Harness;
let s3: Awaited<ReturnType<typeof startLocalS3>>;
let archive: Awaited<ReturnType<typeof startArchiveStream>>;
let stream: Awaited<ReturnType<typeof startOutcomeStream>>;
let recorder: EvidenceRecorder;
let handle: ReturnType<typeof createSqsHandler>;
let seq = 0;

const purposes = new PurposeRegistry();
const receipt = (n: number) =>
  JSON.stringify(
    receiptIntent({ eventId: `pay_${n}-ord_${n}`, recipient: { ref: `player-${n}`, email: MARKERS.email } }),
  );

/** One SQS record as Lambda delivers it, sent to the queue at `sentAt`. */
const sqsRecord = (body: string, sentAt: number): SQSRecord =>
  lambdaSqsRecord({ messageId: `m-${++seq}`, receiptHandle: `rh-${seq}`, body, sentAt, now: clock.now() });

const rowOf = async (n: number): Promise<DeliveryRecord> =>
  (await h.ledger.get(`acme-games:receipt:pay_${n}-ord_${n}:player-${n}:email:rev=v4`))!;

const delivered = async (n: number) => {
  const row = await rowOf(n);
  const [parsed] = parseLambdaEvent(
    sesEventBridgeEvent(row, 'Delivery', {
      id: `eb-${++seq}`,
      at: clock.now(),
      destination: [MARKERS.email],
      purposeTag: true,
      extra: { delivery: { timestamp: new Date(clock.now()).toISOString(), recipients: [MARKERS.email] } },
    }),
  );
  if (parsed?.kind !== 'evidence') throw new Error('not evidence');
  await recorder.record(parsed.evidence);
};

const measure = async (): Promise<{ sql: PurposeAttainment; metrics: Record<string, number> }> => {
  await archive.drain();
  await stream.drain();
  const audit = await DuckDbAudit.open(archive.mirrorDir);
  try {
    const queries = new Map(loadNamedQueries().map((q) => [q.name, q]));
    const model = createSloReadModel({
      run: (name, args) => audit.runNamed(queries.get(name)!, args),
      purposes,
      clock,
    });
    const [sql] = await model.attainment({
      tenant: 'acme-games',
      purposes: ['receipt'],
      until: clock.now() + 1,
    });
    const metrics: Record<string, number> = {};
    for (const set of sloMetricSets(stream.observations, purposes).filter((s) => s.dimensions.channel))
      for (const m of set.metrics)
        if (m.unit === 'Count') metrics[m.name] = (metrics[m.name] ?? 0) + m.values[0]!;
    return { sql: sql!, metrics };
  } finally {
    audit.close();
  }
};

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
  s3 = await startLocalS3('slo-archive');
  archive = await startArchiveStream(h.table, s3.s3, 'slo-archive');
  stream = await startOutcomeStream(h.table);
  recorder = new EvidenceRecorder({
    labels: testLabelKeys,
    ledger: h.ledger,
    store: new DynamoEvidenceStore(localDynamo().doc, h.table),
    purposes,
    clock,
  });
  // An SES-like email provider: accepted now, delivery reported by events later.
  const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
  handle = createSqsHandler(h.dispatcher({ transports }), { concurrency: 1 });
});
afterAll(async () => {
  await s3?.stop();
  await sim?.stop();
});

describe('receipt SLO: attainment and budget move by exactly what was injected', () => {
  let baseline: Awaited<ReturnType<typeof measure>>;

  it('baseline: 10 receipts accepted within a second of publish, 9 delivered within 2 s (one never reported)', async () => {
    // Act
    for (let n = 1; n <= 10; n++) {
      await handle({ Records: [sqsRecord(receipt(n), clock.now())] });
      clock.advance(1_000);
    }
    for (let n = 1; n <= 10; n++) if (n !== 2) await delivered(n);
    baseline = await measure();

    // Assess
    const { total } = baseline.sql;
    expect(total.accepted).toMatchObject({ target: 0.99, eligible: 10, good: 10, bad: 0, attainment: 1 });
    expect(total.delivered).toMatchObject({ eligible: 9, good: 9, bad: 0 });
    expect(total.deliveryUnreported).toBe(1);
    expect(total.duplicates).toMatchObject({ eligible: 10, good: 10, bad: 0 });
    expect(baseline.sql.channels.map((c) => c.channel)).toEqual(['email']);
  });

  it('two receipts wait 3 minutes in the queue, one delivery is reported 11 minutes late, one receipt is accepted twice', async () => {
    // Act: s2's delivery comes 11 minutes after its request (the objective is 10).
    clock.set(start + 1_000 + 11 * MINUTE);
    await delivered(2);
    // Two intents published now, received by the dispatcher 3 minutes later (the objective is 2).
    const sentAt = clock.now();
    clock.advance(3 * MINUTE);
    await handle({ Records: [sqsRecord(receipt(11), sentAt), sqsRecord(receipt(12), sentAt)] });
    // The first receipt's row disappears (as by its TTL) and its intent is published again: sent again.
    clock.advance(1_000);
    await localDynamo().doc.send(new DeleteCommand({ TableName: h.table, Key: { pk: (await rowOf(1)).pk } }));
    await handle({ Records: [sqsRecord(receipt(1), clock.now())] });
    const after = await measure();

    // Assess: the archive query
    const { total } = after.sql;
    expect(total.accepted.eligible - baseline.sql.total.accepted.eligible).toBe(3);
    expect(total.accepted.bad - baseline.sql.total.accepted.bad).toBe(2);
    expect(total.accepted).toMatchObject({ eligible: 13, good: 11, bad: 2, attainment: 11 / 13 });
    expect(total.accepted.budget).toBeCloseTo(0.13, 10);
    expect(total.accepted.budgetLeft).toBeCloseTo(0.13 - 2, 10);
    expect(total.delivered).toMatchObject({ eligible: 10, good: 9, bad: 1 });
    expect(total.deliveryUnreported).toBe(3);
    expect(total.duplicates).toMatchObject({ eligible: 12, good: 11, bad: 1 });
    expect(total.duplicates.budget).toBeCloseTo(12 / 100_000, 12);
    expect(total.duplicates.budgetLeft).toBeCloseTo(12 / 100_000 - 1, 12);
    // The stream metrics (what CloudWatch's SLOs count) say the same.
    expect(after.metrics[SLO_METRIC.acceptanceDecided]).toBe(13);
    expect(after.metrics[SLO_METRIC.acceptanceGood]).toBe(11);
    expect(after.metrics[SLO_METRIC.deliveryDecided]).toBe(10);
    expect(after.metrics[SLO_METRIC.deliveryGood]).toBe(9);
    expect(after.metrics[SLO_METRIC.acceptances]).toBe(13);
  });
});
