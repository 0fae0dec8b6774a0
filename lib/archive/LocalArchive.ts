import { CreateBucketCommand, S3ServiceException } from '@aws-sdk/client-s3';
import { dynamoClient } from '../aws/clients.js';
import { dynamoStreamsClient, s3Client } from '../aws/storageClients.js';
import { type ArchiveLogger, createArchiver, type RetentionDaysOf } from './archiver.js';
import { type FailedBatchInfo, LocalStreamPoller } from './LocalStreamPoller.js';

export interface LocalArchiveOptions {
  region: string;
  /** DynamoDB Local, e.g. http://127.0.0.1:8000 (the stream is read from the same endpoint). */
  dynamoEndpoint: string;
  /** Local S3 (fauxqs), e.g. http://127.0.0.1:4566. */
  s3Endpoint: string;
  ledgerTable: string;
  bucket: string;
  /** The folder `sendproof audit` reads; every object is written here too. */
  mirrorDir: string;
  logger: ArchiveLogger;
  intervalMs?: number;
  /** Event-source settings, mirrored (defaults: LOCAL_ARCHIVE_BATCHING). */
  batchSize?: number;
  maxBatchingWindowMs?: number;
  retryAttempts?: number;
  /** The on-failure destination: receives the coordinates of a batch given up after the retries. */
  onFailure?: (batch: FailedBatchInfo) => Promise<void> | void;
  retentionDaysOf?: RetentionDaysOf;
  /** The S3 client (default: one for s3Endpoint); tests pass one that refuses writes. */
  s3?: ReturnType<typeof s3Client>;
}

/**
 * The local event-source settings: the AWS mapping batches up to 1,000 records for up to 60 s
 * (infra/constructs/AuditArchive.ts); locally the window is 2 s so the demo's archive fills in moments.
 */
export const LOCAL_ARCHIVE_BATCHING = { batchSize: 1000, maxBatchingWindowMs: 2_000 } as const;

/**
 * Local mode's archiver: the same handler as the Lambda, fed by a poller on DynamoDB Local's stream,
 * writing to the local S3 bucket (created if missing) and the mirror folder. Stop it with `stop()`.
 */
export const startLocalArchive = async (options: LocalArchiveOptions): Promise<LocalStreamPoller> => {
  // The archive function's own writes, and (via: event-source) the stream reads Lambda makes for it on
  // the same role, are attributed to it for the command recorder; creating the bucket and finding the
  // stream are set-up (CloudFormation's part in AWS), made by clients that record nothing.
  const settings = { archiveBucket: options.bucket, ledgerTable: options.ledgerTable };
  const s3 =
    options.s3 ??
    s3Client({
      region: options.region,
      endpoint: options.s3Endpoint,
      caller: { function: 'archive', settings },
    });
  try {
    await s3Client({ region: options.region, endpoint: options.s3Endpoint }).send(
      new CreateBucketCommand({ Bucket: options.bucket }),
    );
  } catch (error) {
    const owned = error instanceof S3ServiceException && error.name === 'BucketAlreadyOwnedByYou';
    if (!owned) throw error;
  }
  const endpoint = { region: options.region, endpoint: options.dynamoEndpoint };
  const streamArn = await LocalStreamPoller.streamArnOf(dynamoClient(endpoint), options.ledgerTable);
  const poller = new LocalStreamPoller({
    streams: dynamoStreamsClient({
      ...endpoint,
      caller: { function: 'archive', via: 'event-source', settings },
    }),
    streamArn,
    region: options.region,
    handler: createArchiver({
      s3,
      bucket: options.bucket,
      mirrorDir: options.mirrorDir,
      logger: options.logger,
      ...(options.retentionDaysOf ? { retentionDaysOf: options.retentionDaysOf } : {}),
    }),
    logger: options.logger,
    batchSize: options.batchSize ?? LOCAL_ARCHIVE_BATCHING.batchSize,
    maxBatchingWindowMs: options.maxBatchingWindowMs ?? LOCAL_ARCHIVE_BATCHING.maxBatchingWindowMs,
    ...(options.retryAttempts !== undefined ? { retryAttempts: options.retryAttempts } : {}),
    ...(options.onFailure ? { onFailure: options.onFailure } : {}),
    ...(options.intervalMs ? { intervalMs: options.intervalMs } : {}),
  });
  poller.start();
  return poller;
};
