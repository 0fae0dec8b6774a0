import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { parseOrThrow } from '../domain/parseOrThrow.js';
import { type ArchiverOptions, partitionOf, writeArchiveObject } from './archiver.js';
import type { FailedBatchInfo } from './LocalStreamPoller.js';
import { backfillObjectKey, type Partition } from './objectKey.js';
import type { ArchiveRecord } from './schema.js';
import { transitionsOf } from './transitions.js';

/**
 * The backfill: transitions the stream archiver gave up on (its retries exhausted, only the batch's
 * coordinates kept by the on-failure destination) are archived later from the ledger rows' own history,
 * which holds every transition until the row's TTL — the stream forgets after 24 h, the row does not.
 *
 * The coordinates name a stream batch (shard, sequence range, arrival times), not rows. The rows are
 * found by time: every row with a transition inside the batch's arrival window (widened by `slackMs`,
 * since a transition reaches the stream shortly after it happens). Their transitions in that window are
 * written as one object per partition, keyed by the batch coordinates: a second backfill of the same
 * batch rewrites the same keys, and a transition that was in fact archived before is stored twice and
 * counted once by every query. Cost: one Scan of the ledger per failed batch (rare by design; an alarm
 * on the failure queue says when it is needed).
 */
export const FailedBatchSchema = z.object({
  shardId: z.string().check(z.minLength(1)),
  startSequenceNumber: z.string().check(z.regex(/^\d{1,40}$/)),
  endSequenceNumber: z.string().check(z.regex(/^\d{1,40}$/)),
  approximateArrivalOfFirstRecord: z.iso.datetime({ offset: true }),
  approximateArrivalOfLastRecord: z.iso.datetime({ offset: true }),
  batchSize: z.number().check(z.int(), z.minimum(0)),
  streamArn: z.string().check(z.minLength(1)),
});

/** Lambda's on-failure record for a stream batch: the coordinates sit in `DDBStreamBatchInfo`. */
export const parseFailureMessage = (body: string): FailedBatchInfo => {
  const value = JSON.parse(body) as { DDBStreamBatchInfo?: unknown };
  return parseOrThrow(FailedBatchSchema, value.DDBStreamBatchInfo ?? value);
};

/** The message the local poller's failure destination sends: the same shape Lambda sends. */
export const failureMessageOf = (batch: FailedBatchInfo, now = Date.now()) =>
  JSON.stringify({
    requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 0 },
    timestamp: new Date(now).toISOString(),
    version: '1.0',
    DDBStreamBatchInfo: batch,
  });

export interface BackfillOptions {
  doc: DynamoDBDocumentClient;
  table: string;
  writer: Pick<ArchiverOptions, 's3' | 'bucket' | 'mirrorDir' | 'retentionDaysOf' | 'now'>;
  slackMs?: number;
}

export interface BackfillResult {
  rows: number;
  transitions: number;
  objects: string[];
}

const asInsert = (item: Record<string, unknown>): DynamoDBRecord => ({
  eventName: 'INSERT',
  eventID: 'backfill',
  dynamodb: {
    NewImage: marshall(item, { removeUndefinedValues: true }) as Record<string, SdkAttributeValue> as {
      [key: string]: AttributeValue;
    },
  },
});

/** Archives, from the ledger's history, every transition inside one failed batch's arrival window. */
export const backfillBatch = async (
  options: BackfillOptions,
  batch: FailedBatchInfo,
): Promise<BackfillResult> => {
  const slack = options.slackMs ?? 5 * 60_000;
  const start = Date.parse(batch.approximateArrivalOfFirstRecord) - slack;
  const end = Date.parse(batch.approximateArrivalOfLastRecord) + slack;
  const groups = new Map<string, { partition: Partition; lines: ArchiveRecord[] }>();
  let rows = 0;
  let transitions = 0;
  let cursor: Record<string, unknown> | undefined;
  do {
    const page = await options.doc.send(
      new ScanCommand({
        TableName: options.table,
        ExclusiveStartKey: cursor,
        ConsistentRead: true,
      }),
    );
    for (const item of page.Items ?? []) {
      const lines = transitionsOf(asInsert(item)).filter(
        (l) => l.transition_at_ms !== null && l.transition_at_ms >= start && l.transition_at_ms <= end,
      );
      if (lines.length === 0) continue;
      rows += 1;
      transitions += lines.length;
      for (const line of lines) {
        const partition = partitionOf(line);
        const id = `${partition.tenant}/${partition.date}`;
        const group = groups.get(id) ?? { partition, lines: [] };
        group.lines.push(line);
        groups.set(id, group);
      }
    }
    cursor = page.LastEvaluatedKey;
  } while (cursor);
  const objects: string[] = [];
  for (const { partition, lines } of groups.values()) {
    const key = backfillObjectKey(partition, batch.startSequenceNumber, batch.endSequenceNumber);
    await writeArchiveObject(options.writer, key, lines);
    objects.push(key);
  }
  return { rows, transitions, objects };
};

export interface DrainResult {
  batches: number;
  transitions: number;
  objects: string[];
  /** Messages that could not be backfilled; they stay on the queue (and its alarm stays on). */
  failed: number;
  errors: string[];
}

/**
 * Backfills every batch waiting on the failure queue. A message is deleted only after its backfill is
 * written, so the queue depth (alarmed) is exactly what still waits.
 */
export const drainFailureQueue = async (
  options: BackfillOptions & { sqs: SQSClient; queueUrl: string; maxMessages?: number },
): Promise<DrainResult> => {
  const result: DrainResult = { batches: 0, transitions: 0, objects: [], failed: 0, errors: [] };
  const limit = options.maxMessages ?? 1000;
  while (result.batches + result.failed < limit) {
    const out = await options.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: options.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) break;
    for (const message of messages) {
      try {
        const done = await backfillBatch(options, parseFailureMessage(message.Body ?? ''));
        await options.sqs.send(
          new DeleteMessageCommand({ QueueUrl: options.queueUrl, ReceiptHandle: message.ReceiptHandle! }),
        );
        result.batches += 1;
        result.transitions += done.transitions;
        result.objects.push(...done.objects);
      } catch (error) {
        // Kept on the queue: it becomes visible again and the next run retries it.
        result.failed += 1;
        result.errors.push(`${message.MessageId}: ${error instanceof Error ? error.name : 'unknown'}`);
      }
    }
    if (result.failed > 0) break;
  }
  return result;
};
