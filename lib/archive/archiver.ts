import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Logger } from '@aws-lambda-powertools/logger';
import { PutObjectCommand, type PutObjectCommandInput, type S3Client } from '@aws-sdk/client-s3';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { ArchiveRecordError } from './errors.js';
import { batchObjectKey, type Partition, partitionDate } from './objectKey.js';
import { ARCHIVE_COLUMNS, type ArchiveRecord, NO_TENANT } from './schema.js';
import { isTtlDeletion, transitionsOf } from './transitions.js';

/**
 * The archiver's stream batching: one object per batch and partition, so the batch size and window set
 * the number of PUTs. At 10 notifications/s (~30 transitions/s) a 60 s window gathers ~1,000 records.
 */
export const ARCHIVE_BATCHING = { batchSize: 1000, maxBatchingWindowSeconds: 60 } as const;

export type ArchiveLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

/** Days an archived transition of this purpose stays under Object Lock (the purpose's policy). */
export type RetentionDaysOf = (purpose: string | null) => number;

export interface ArchiverOptions {
  s3: S3Client;
  bucket: string;
  /** Local mode: every object is also written here under the same key (the DuckDB audit reads it). */
  mirrorDir?: string;
  logger: ArchiveLogger;
  /** Object Lock retention per purpose; without it the bucket's default retention applies. */
  retentionDaysOf?: RetentionDaysOf;
  /** Called once per object written, with the number of transitions it holds (metrics). */
  onArchived?: (transitions: number) => void;
  /** Clock for the retain-until floor (tests). */
  now?: () => number;
}

export type ArchiveHandler = (
  event: DynamoDBStreamEvent,
  context?: Context,
) => Promise<DynamoDBBatchResponse>;

/** One JSON line per transition, with every column in ARCHIVE_COLUMNS order (nulls explicit). */
export const toJsonLine = (line: ArchiveRecord): string =>
  JSON.stringify(Object.fromEntries(ARCHIVE_COLUMNS.map((c) => [c.name, line[c.name]])));

export const partitionOf = (line: ArchiveRecord): Partition => ({
  tenant: line.tenant ?? NO_TENANT,
  date: partitionDate(line.transition_at_ms!),
});

const partitionId = (p: Partition): string => `${p.tenant}/${p.date}`;

/** The gzip JSON Lines body of some transitions, and its sha256 (hex), as the digests record it. */
export const encodeObject = (lines: readonly ArchiveRecord[]): { body: Buffer; sha256: string } => {
  const body = gzipSync(`${lines.map(toJsonLine).join('\n')}\n`);
  return { body, sha256: createHash('sha256').update(body).digest('hex') };
};

const MS_PER_DAY = 86_400_000;

/**
 * COMPLIANCE-mode retain-until of an object: the latest `transition time + retention of its purpose` over
 * its lines (an object mixes purposes; it lives as long as its longest-kept line needs), and never less
 * than a day from now (S3 refuses a retain-until date in the past, e.g. for a late backfill).
 */
export const retainUntil = (lines: readonly ArchiveRecord[], daysOf: RetentionDaysOf, now: number): Date =>
  new Date(
    Math.max(
      now + MS_PER_DAY,
      ...lines.map((l) => (l.transition_at_ms ?? now) + daysOf(l.purpose) * MS_PER_DAY),
    ),
  );

export const writeMirror = async (mirrorDir: string, key: string, body: Buffer): Promise<void> => {
  const path = join(mirrorDir, key);
  await mkdir(dirname(path), { recursive: true });
  // Write then rename, so a reader never sees half an object.
  const partial = `${path}.${process.pid}.partial`;
  await writeFile(partial, body);
  await rename(partial, path);
};

/** The PutObject input of one archive object (exported so tests can assert the Object Lock headers). */
export const putInput = (
  bucket: string,
  key: string,
  body: Buffer,
  lines: readonly ArchiveRecord[],
  daysOf: RetentionDaysOf | undefined,
  now: number,
): PutObjectCommandInput => ({
  Bucket: bucket,
  Key: key,
  Body: body,
  ContentType: 'application/x-ndjson',
  ContentEncoding: 'gzip',
  // Object Lock buckets refuse puts without an integrity checksum.
  ChecksumAlgorithm: 'SHA256',
  Metadata: { 'sendproof-records': String(lines.length) },
  ...(daysOf
    ? { ObjectLockMode: 'COMPLIANCE' as const, ObjectLockRetainUntilDate: retainUntil(lines, daysOf, now) }
    : {}),
});

/** Writes one archive object to S3 (and the mirror). */
export const writeArchiveObject = async (
  options: Pick<ArchiverOptions, 's3' | 'bucket' | 'mirrorDir' | 'retentionDaysOf' | 'now'>,
  key: string,
  lines: readonly ArchiveRecord[],
): Promise<void> => {
  const { body } = encodeObject(lines);
  const now = (options.now ?? Date.now)();
  await options.s3.send(
    new PutObjectCommand(putInput(options.bucket, key, body, lines, options.retentionDaysOf, now)),
  );
  if (options.mirrorDir) await writeMirror(options.mirrorDir, key, body);
};

interface Group {
  partition: Partition;
  lines: ArchiveRecord[];
  /** Index (in the batch) of the first record that contributed a line. */
  firstIndex: number;
}

/**
 * The archiver's core, independent of Lambda: consumes one DynamoDB stream batch and writes its new
 * transitions as ONE gzip JSON Lines object per partition (`tenant=…/dt=…`), not one per record.
 *
 * Failure semantics follow the stream event source's checkpoint (ReportBatchItemFailures): the handler
 * reports the lowest sequence number that is not safely archived, and the event source retries from
 * there (bisecting if it keeps failing). Everything before it is archived; everything after it is
 * archived again on the retry (possibly a second time, under another batch key: the queries dedupe).
 * - A record that cannot be turned into transitions stops the batch at that record; the records before
 *   it are still written.
 * - A failed PUT makes its group's first contributing record the failure point.
 */
export const createArchiver = (options: ArchiverOptions): ArchiveHandler => {
  const { logger, onArchived } = options;

  return async (event) => {
    const records: DynamoDBRecord[] = event.Records;
    let failAt = records.length;
    const groups = new Map<string, Group>();
    for (const [index, record] of records.entries()) {
      if (record.eventName === 'REMOVE') {
        // A TTL expiry is housekeeping. Nothing in Sendproof deletes a ledger row otherwise, so any other
        // delete is not a transition but is worth an operator's attention (the archive keeps the history).
        if (isTtlDeletion(record))
          logger.debug('stream record skipped: TTL expiry', { eventId: record.eventID });
        else logger.error('ledger row deleted outside TTL', { eventId: record.eventID });
        continue;
      }
      let lines: ArchiveRecord[];
      try {
        if (!record.dynamodb?.SequenceNumber)
          throw new ArchiveRecordError(`stream record ${record.eventID} has no sequence number`);
        lines = transitionsOf(record);
      } catch (error) {
        logger.error('stream record not archived', {
          eventId: record.eventID,
          sequenceNumber: record.dynamodb?.SequenceNumber,
          error: error instanceof Error ? error.name : 'unknown',
        });
        failAt = index;
        break;
      }
      for (const line of lines) {
        const partition = partitionOf(line);
        const id = partitionId(partition);
        const group = groups.get(id) ?? { partition, lines: [], firstIndex: index };
        group.lines.push(line);
        groups.set(id, group);
      }
    }

    const accepted = records.slice(0, failAt);
    const first = accepted[0]?.dynamodb?.SequenceNumber;
    const last = accepted[accepted.length - 1]?.dynamodb?.SequenceNumber;
    if (first && last) {
      const results = await Promise.allSettled(
        [...groups.values()].map(async (group) => {
          const key = batchObjectKey(group.partition, first, last);
          await writeArchiveObject(options, key, group.lines);
          onArchived?.(group.lines.length);
          return { key, group };
        }),
      );
      for (const [i, result] of results.entries()) {
        const group = [...groups.values()][i]!;
        if (result.status === 'fulfilled') {
          logger.info('transitions archived', {
            key: result.value.key,
            transitions: group.lines.length,
          });
        } else {
          const error = result.reason as { name?: string; code?: string };
          // The failure destination gets coordinates only; say why here.
          logger.error('archive object not written', {
            tenant: group.partition.tenant,
            dt: group.partition.date,
            sequenceNumber: records[group.firstIndex]?.dynamodb?.SequenceNumber,
            error: error?.name ?? 'unknown',
            code: error?.code,
          });
          failAt = Math.min(failAt, group.firstIndex);
        }
      }
    }
    const failed = records[failAt]?.dynamodb?.SequenceNumber;
    return { batchItemFailures: failed ? [{ itemIdentifier: failed }] : [] };
  };
};
