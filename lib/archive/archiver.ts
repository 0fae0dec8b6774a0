import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { ArchiveRecordError } from './errors.js';
import { archiveObjectKey, partitionDate } from './objectKey.js';
import { ARCHIVE_COLUMNS, type ArchiveRecord } from './schema.js';
import { isTtlDeletion, transitionsOf } from './transitions.js';

export type ArchiveLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface ArchiverOptions {
  s3: S3Client;
  bucket: string;
  /** Local mode: every object is also written here under the same key (the DuckDB audit reads it). */
  mirrorDir?: string;
  logger: ArchiveLogger;
  /** Called once per stream record with the number of transitions it archived (metrics). */
  onArchived?: (transitions: number) => void;
}

export type ArchiveHandler = (
  event: DynamoDBStreamEvent,
  context?: Context,
) => Promise<DynamoDBBatchResponse>;

/** One JSON line per transition, with every column in ARCHIVE_COLUMNS order (nulls explicit). */
export const toJsonLine = (line: ArchiveRecord): string =>
  JSON.stringify(Object.fromEntries(ARCHIVE_COLUMNS.map((c) => [c.name, line[c.name]])));

/** Groups one record's lines by the date of the transition (not the stream arrival time). */
const byDate = (lines: ArchiveRecord[]): Map<string, ArchiveRecord[]> => {
  const groups = new Map<string, ArchiveRecord[]>();
  for (const line of lines) {
    const date = partitionDate(line.transition_at_ms!);
    groups.set(date, [...(groups.get(date) ?? []), line]);
  }
  return groups;
};

const writeMirror = async (mirrorDir: string, key: string, body: Buffer): Promise<void> => {
  const path = join(mirrorDir, key);
  await mkdir(dirname(path), { recursive: true });
  // Write then rename, so a reader never sees half an object.
  const partial = `${path}.${process.pid}.partial`;
  await writeFile(partial, body);
  await rename(partial, path);
};

/**
 * The archiver's core, independent of Lambda: consumes one DynamoDB stream batch and writes every new
 * transition as gzip JSON Lines to S3 (and the mirror folder, locally). Partial failures are reported
 * per record (`batchItemFailures`), so the event source retries from the first failed sequence number.
 */
export const createArchiver = (options: ArchiverOptions): ArchiveHandler => {
  const { s3, bucket, mirrorDir, logger, onArchived } = options;

  const archiveRecord = async (record: DynamoDBRecord): Promise<void> => {
    if (record.eventName === 'REMOVE') {
      // A TTL expiry is housekeeping. Nothing in Sendproof deletes a ledger row otherwise, so any other
      // delete is not a transition but is worth an operator's attention (the archive keeps the history).
      if (isTtlDeletion(record))
        logger.debug('stream record skipped: TTL expiry', { eventId: record.eventID });
      else logger.error('ledger row deleted outside TTL', { eventId: record.eventID });
      return;
    }
    try {
      await archiveTransitions(record);
    } catch (error) {
      // The batch processor keeps the error to itself; the failure queue gets coordinates only. Say why.
      logger.error('stream record not archived', {
        eventId: record.eventID,
        sequenceNumber: record.dynamodb?.SequenceNumber,
        error: error instanceof Error ? error.name : 'unknown',
        code: (error as { code?: string }).code,
      });
      throw error;
    }
  };

  const archiveTransitions = async (record: DynamoDBRecord): Promise<void> => {
    const lines = transitionsOf(record);
    if (lines.length === 0) return;
    const sequence = record.dynamodb?.SequenceNumber;
    if (!sequence) throw new ArchiveRecordError(`stream record ${record.eventID} has no sequence number`);
    for (const [date, group] of byDate(lines)) {
      const key = archiveObjectKey(date, sequence);
      const body = gzipSync(`${group.map(toJsonLine).join('\n')}\n`);
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentType: 'application/x-ndjson',
          ContentEncoding: 'gzip',
          // Object Lock buckets refuse puts without an integrity checksum.
          ChecksumAlgorithm: 'SHA256',
        }),
      );
      if (mirrorDir) await writeMirror(mirrorDir, key, body);
    }
    logger.info('transitions archived', {
      dedupeKey: lines[0]!.dedupe_key,
      versions: lines.map((l) => l.version),
      sequenceNumber: sequence,
    });
    onArchived?.(lines.length);
  };

  return async (event, context) => {
    // A fresh processor per batch: concurrent invocations in one process must not share failure state.
    const processor = new BatchProcessor(EventType.DynamoDBStreams);
    return processPartialResponse(event, archiveRecord, processor, context ? { context } : undefined);
  };
};
