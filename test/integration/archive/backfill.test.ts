import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainFailureQueue, failureMessageOf } from '../../../lib/archive/backfill.js';
import { DuckDbAudit } from '../../../lib/archive/DuckDbAudit.js';
import { startLocalArchive } from '../../../lib/archive/LocalArchive.js';
import type { FailedBatchInfo, LocalStreamPoller } from '../../../lib/archive/LocalStreamPoller.js';
import { loadNamedQueries } from '../../../lib/archive/namedQueries.js';
import { dynamoDocumentClient, sqsClient } from '../../../lib/aws/clients.js';
import { s3Client } from '../../../lib/aws/storageClients.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { waitFor } from '../../../lib/local/ports.js';
import { queueDepth } from '../../../lib/local/queues.js';
import { baseRow, dedupeKeyOf } from '../../fixtures/archive/streamRecords.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';
import { linesOf, readBucket, startLocalS3 } from './localS3.js';

const logger = new Logger({ serviceName: 'sendproof-test', logLevel: 'SILENT' });

// Real servers: DynamoDB Local (stream), fauxqs (S3 and the SQS failure destination), DuckDB. S3 refuses
// every archive write for longer than the poller's retry budget; the batch is given up (coordinates on
// the failure queue), then S3 recovers and the backfill archives the lost transitions from the ledger.
describe('backfill after the archiver gave up on a batch', () => {
  let local: Awaited<ReturnType<typeof startLocalS3>>;
  let poller: LocalStreamPoller | undefined;
  let mirrorDir: string;

  beforeAll(async () => {
    local = await startLocalS3('archive-backfill');
    mirrorDir = await mkdtemp(join(tmpdir(), 'sendproof-backfill-'));
  });

  afterAll(async () => {
    await poller?.stop();
    await local?.stop();
    await rm(mirrorDir, { recursive: true, force: true });
  });

  it('S3 down past the retry budget → after recovery the backfill makes archive = ledger, each transition once', async () => {
    // Prepare
    const { raw, doc, endpoint } = localDynamo();
    const table = await createLedgerTable(raw, 'archive-backfill');
    const ledger = new DynamoLedger(doc, table);
    const sqs = sqsClient({ region: 'us-east-1', endpoint: local.endpoint });
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'archive-failures' }))).QueueUrl!;
    let refusing = true;
    let refused = 0;
    const s3 = s3Client({ region: 'us-east-1', endpoint: local.endpoint });
    s3.middlewareStack.add(
      (next) => async (args) => {
        if (refusing && (args.input as { Body?: unknown }).Body !== undefined) {
          refused += 1;
          throw Object.assign(new Error('S3 is refusing writes'), { name: 'ServiceUnavailable' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'refuseWhileDown' },
    );
    const given: FailedBatchInfo[] = [];
    poller = await startLocalArchive({
      region: 'us-east-1',
      dynamoEndpoint: endpoint,
      s3Endpoint: local.endpoint,
      s3,
      ledgerTable: table,
      bucket: 'archive-backfill',
      mirrorDir,
      logger,
      intervalMs: 50,
      maxBatchingWindowMs: 300,
      retryAttempts: 2,
      onFailure: async (batch) => {
        given.push(batch);
        await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: failureMessageOf(batch) }));
      },
    });
    const notify = async (eventId: string) => {
      const n = { eventId, recipientRef: 'user-bf', channel: 'email' as const };
      const pk = dedupeKeyOf(n);
      const t = Date.now();
      await ledger.claim(baseRow(n, { s: 'claimed', at: t, by: 'dispatch:bf' }));
      const steps = [
        { from: 'claimed', to: 'dispatching', set: { transport: 'ses', attempts: 1 } },
        { from: 'dispatching', to: 'accepted', set: { providerMessageId: `ses-${eventId}` } },
      ] as const;
      for (const [i, step] of steps.entries())
        await ledger.transition({ pk, expectedVersion: i + 1, now: t + i + 1, by: 'dispatch:bf', ...step });
    };

    // Act: two notifications while S3 is down (given up), then S3 recovers and one more is archived.
    await notify('evt-bf-1');
    await notify('evt-bf-2');
    await waitFor(async () => given.length > 0, 20_000, 'the poller to give up on the batch');
    const depthWhileWaiting = await queueDepth(sqs, queueUrl);
    refusing = false;
    await notify('evt-bf-3');
    await waitFor(
      async () => linesOf(await readBucket(local.s3, 'archive-backfill')).length >= 3,
      20_000,
      'evt-bf-3',
    );
    const beforeBackfill = linesOf(await readBucket(local.s3, 'archive-backfill')).length;
    // The backfill is the archive-maintenance function's code: its clients are that function's (the AWS
    // command recorder holds their commands to its role, test/infra/iamCommands.test.ts).
    const caller = {
      function: 'archiveMaintenance',
      settings: { ledgerTable: table, archiveFailuresUrl: queueUrl, archiveBucket: 'archive-backfill' },
    };
    const maintenance = {
      doc: dynamoDocumentClient({ region: 'us-east-1', endpoint, caller }),
      sqs: sqsClient({ region: 'us-east-1', endpoint: local.endpoint, caller }),
      s3: s3Client({ region: 'us-east-1', endpoint: local.endpoint, caller }),
    };
    const writer = { s3: maintenance.s3, bucket: 'archive-backfill', mirrorDir };
    const drain = () =>
      drainFailureQueue({ doc: maintenance.doc, table, writer, sqs: maintenance.sqs, queueUrl });
    const drained = await drain();
    const again = await drain();

    // Assess
    expect(refused).toBeGreaterThanOrEqual(3); // the first try and two retries
    expect(depthWhileWaiting).toBe(given.length); // the alarmed queue holds what waits
    expect(beforeBackfill).toBe(3);
    // The window (arrival ± 5 min slack) also catches evt-bf-3, archived already: stored twice, counted once.
    expect(drained).toMatchObject({ batches: given.length, failed: 0, transitions: 9 });
    expect(again).toMatchObject({ batches: 0, transitions: 0 });
    expect(await queueDepth(sqs, queueUrl)).toBe(0);
    const rows = await scanRows(doc, table);
    const inLedger = rows.flatMap((r) => r.history.map((h, i) => `${r.pk}#${i + 1}#${h.at}`)).sort();
    const archived = linesOf(await readBucket(local.s3, 'archive-backfill')).map(
      (l) => `${l.dedupe_key}#${l.version}#${l.transition_at_ms}`,
    );
    expect(inLedger).toHaveLength(9);
    expect([...new Set(archived)].sort()).toEqual(inLedger);
    const audit = await DuckDbAudit.open(mirrorDir);
    try {
      const outcomes = loadNamedQueries().find((q) => q.name === 'channel-outcomes-daily')!;
      const day = new Date().toISOString().slice(0, 10);
      const { rows: counted } = await audit.runNamed(outcomes, ['default', day, day]);
      expect(counted).toEqual([{ day, channel: 'email', outcome: 'accepted', notifications: 3 }]);
    } finally {
      audit.close();
    }
  }, 60_000);
});

const scanRows = async (
  doc: ReturnType<typeof localDynamo>['doc'],
  table: string,
): Promise<DeliveryRecord[]> => {
  const { ScanCommand } = await import('@aws-sdk/lib-dynamodb');
  const out = await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
  return (out.Items ?? []).filter((i) => Array.isArray(i.history)) as DeliveryRecord[];
};
