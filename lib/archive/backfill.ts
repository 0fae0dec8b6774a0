import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import { type ArchiverOptions, partitionOf, writeArchiveObject } from './archiver.js';
import { type DrainResult, drainFailures } from './failureQueue.js';
import type { FailedBatchInfo } from './LocalStreamPoller.js';
import { backfillObjectKey, type Partition } from './objectKey.js';
import type { ArchiveRecord } from './schema.js';
import { transitionsOf } from './transitions.js';

export {
  type DrainResult,
  FailedBatchSchema,
  failureMessageOf,
  parseFailureMessage,
} from './failureQueue.js';

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

/**
 * Backfills every batch waiting on the failure queue (lib/archive/failureQueue.ts), each from the ledger's
 * history (`backfillBatch`).
 */
export const drainFailureQueue = (
  options: BackfillOptions & { sqs: SQSClient; queueUrl: string; maxMessages?: number },
): Promise<DrainResult> => drainFailures({ ...options, backfill: (batch) => backfillBatch(options, batch) });
