import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { ARCHIVE_BATCHING, createArchiver } from '../lib/archive/archiver.js';
import { LocalStreamPoller } from '../lib/archive/LocalStreamPoller.js';
import { dynamoClient } from '../lib/aws/clients.js';
import { dynamoStreamsClient, s3Client } from '../lib/aws/storageClients.js';
import { DynamoLedger } from '../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../lib/ledger/port.js';
import { startFauxqs } from '../lib/local/queues.js';
import { type BenchDynamo, createLedgerTables } from './stack.js';

export interface ArchiveBatchingResult {
  notificationsPerSecond: number;
  seconds: number;
  tenants: number;
  transitions: number;
  /** PUTs the batched archiver made (one per stream batch and partition). */
  puts: number;
  /** PUTs the per-record layout would have made: one per stream record that adds a transition. */
  putsPerRecordLayout: number;
  objectsPer100Transitions: number;
  objectsPer100TransitionsBefore: number;
  batchSize: number;
  windowMs: number;
}

const quietLogger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * Objects per 100 transitions at steady load: ledger writes at a fixed rate (claim → dispatching →
 * accepted per notification, round-robin over tenants) on DynamoDB Local with its stream, read by the
 * local poller with the AWS event-source settings (1,000 records / 60 s), archived to fauxqs S3; every PUT
 * is counted at the SDK. The per-record layout's count is the number of stream records that add a
 * transition (what it wrote: one object each).
 */
export const measureArchiveBatching = async (
  dynamo: BenchDynamo,
  options: { notificationsPerSecond: number; seconds: number; tenants: number },
  progress: (line: string) => void,
): Promise<ArchiveBatchingResult> => {
  const fauxqs = await startFauxqs();
  const mirrorDir = await mkdtemp(join(tmpdir(), 'sendproof-bench-archive-'));
  try {
    const s3 = s3Client({ region: 'us-east-1', endpoint: fauxqs.endpoint });
    await s3.send(new CreateBucketCommand({ Bucket: 'bench-archive' }));
    let puts = 0;
    s3.middlewareStack.add(
      (next) => async (args) => {
        if ((args.input as { Body?: unknown }).Body !== undefined) puts += 1;
        return next(args);
      },
      { step: 'initialize', name: 'countPuts' },
    );
    const { ledgerTable } = await createLedgerTables(dynamo.raw, 'archive');
    const ledger = new DynamoLedger(dynamo.doc, ledgerTable);
    const endpoint = { region: 'us-east-1', endpoint: dynamo.local.endpoint };
    let recordsWithTransitions = 0;
    const archive = createArchiver({ s3, bucket: 'bench-archive', mirrorDir, logger: quietLogger });
    const poller = new LocalStreamPoller({
      streams: dynamoStreamsClient(endpoint),
      streamArn: await LocalStreamPoller.streamArnOf(dynamoClient(endpoint), ledgerTable),
      handler: async (event) => {
        recordsWithTransitions += event.Records.filter((r) => r.eventName !== 'REMOVE').length;
        return archive(event);
      },
      intervalMs: 250,
      batchSize: ARCHIVE_BATCHING.batchSize,
      maxBatchingWindowMs: ARCHIVE_BATCHING.maxBatchingWindowSeconds * 1000,
    });
    poller.start();

    const total = options.notificationsPerSecond * options.seconds;
    const interval = 1000 / options.notificationsPerSecond;
    const start = performance.now();
    const writes: Promise<void>[] = [];
    let transitions = 0;
    for (let i = 0; i < total; i++) {
      const due = start + i * interval;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      writes.push(
        (async () => {
          const tenant = `tenant-${i % options.tenants}`;
          const pk = `${tenant}:password-reset:bench-${i}:user-${i}:email`;
          const t = Date.now();
          const row: DeliveryRecord = {
            pk,
            kind: 'delivery',
            idempotencyKey: `idem-${i}`,
            state: 'claimed',
            version: 1,
            tenant,
            purpose: 'password-reset',
            eventId: `bench-${i}`,
            recipientRef: `user-${i}`,
            channel: 'email',
            logicalKey: `${tenant}:password-reset:bench-${i}:user-${i}`,
            contentHash: 'h1:bench',
            policyVersion: 'password-reset/1',
            templateId: 'password-reset',
            templateRevision: 'r1',
            templateOwner: 'application',
            attempts: 0,
            createdAt: t,
            updatedAt: t,
            history: [{ s: 'claimed', at: t, by: 'dispatch:bench' }],
          };
          await ledger.claim(row);
          await ledger.transition({
            pk,
            expectedVersion: 1,
            now: t + 1,
            from: 'claimed',
            to: 'dispatching',
            by: 'dispatch:bench',
            set: { transport: 'ses', attempts: 1 },
          });
          await ledger.transition({
            pk,
            expectedVersion: 2,
            now: t + 2,
            from: 'dispatching',
            to: 'accepted',
            by: 'dispatch:bench',
            set: { providerMessageId: `ses-${i}` },
          });
          transitions += 3;
        })(),
      );
      if (i % (options.notificationsPerSecond * 5) === 0 && i > 0)
        progress(`archive batching: ${i}/${total} notifications, ${puts} PUTs so far`);
    }
    await Promise.all(writes);
    const seconds = (performance.now() - start) / 1000;
    // Let the poller read the tail, then hand over what the window still holds (as the window's end would).
    await new Promise((r) => setTimeout(r, 1_000));
    await poller.stop();
    await poller.pollOnce();
    await poller.flush();
    return {
      notificationsPerSecond: total / seconds,
      seconds,
      tenants: options.tenants,
      transitions,
      puts,
      putsPerRecordLayout: recordsWithTransitions,
      objectsPer100Transitions: (puts / transitions) * 100,
      objectsPer100TransitionsBefore: (recordsWithTransitions / transitions) * 100,
      batchSize: ARCHIVE_BATCHING.batchSize,
      windowMs: ARCHIVE_BATCHING.maxBatchingWindowSeconds * 1000,
    };
  } finally {
    await fauxqs.stop();
    await rm(mirrorDir, { recursive: true, force: true });
  }
};
