import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  type _Record,
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { ArchiveLogger } from './archiver.js';

export type StreamBatchHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | undefined>;

export interface LocalStreamPollerOptions {
  streams: DynamoDBStreamsClient;
  streamArn: string;
  handler: StreamBatchHandler;
  region?: string;
  /** Pause between polling rounds. */
  intervalMs?: number;
  /** GetRecords limit, like the event source's batch size. */
  batchSize?: number;
  logger?: ArchiveLogger;
}

interface ShardCursor {
  parent?: string;
  iterator?: string;
  /** Where to resume when a new iterator is needed (after a failure or an expired iterator). */
  resume?: { type: 'AT_SEQUENCE_NUMBER' | 'AFTER_SEQUENCE_NUMBER'; sequence: string };
  done: boolean;
}

/** The Lambda event-source shape of one stream record (times in epoch seconds, as Lambda delivers them). */
export const toLambdaRecord = (record: _Record, streamArn: string, region: string): DynamoDBRecord => {
  const data = record.dynamodb ?? {};
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: record.eventSource ?? 'aws:dynamodb',
    awsRegion: record.awsRegion ?? region,
    eventSourceARN: streamArn,
    ...(record.userIdentity
      ? { userIdentity: { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId } }
      : {}),
    dynamodb: {
      ...(data.ApproximateCreationDateTime
        ? { ApproximateCreationDateTime: Math.floor(data.ApproximateCreationDateTime.getTime() / 1000) }
        : {}),
      Keys: data.Keys as never,
      NewImage: data.NewImage as never,
      OldImage: data.OldImage as never,
      SequenceNumber: data.SequenceNumber,
      SizeBytes: data.SizeBytes,
      StreamViewType: data.StreamViewType,
    },
  } as DynamoDBRecord;
};

/**
 * Local stand-in for Lambda's DynamoDB event source: reads DynamoDB Local's stream
 * (DescribeStream → GetShardIterator → GetRecords) and hands each batch to the same handler the
 * archiver Lambda runs. Like the event source, a reported failure re-reads from the first failed
 * sequence number on the next round, so the handler sees retries exactly as it would in AWS.
 *
 *   start() ──► round: describe shards ─► for each open shard (parents first): GetRecords ─► handler
 *                 └──── wait intervalMs ◄──────────────────────────────────────────────────┘   until stop()
 */
export class LocalStreamPoller {
  private readonly shards = new Map<string, ShardCursor>();
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly region: string;
  private readonly intervalMs: number;
  private readonly batchSize: number;

  constructor(private readonly options: LocalStreamPollerOptions) {
    this.region = options.region ?? 'us-east-1';
    this.intervalMs = options.intervalMs ?? 200;
    this.batchSize = options.batchSize ?? 100;
  }

  /** The table's current stream ARN (the table must have a stream). */
  static async streamArnOf(dynamo: DynamoDBClient, tableName: string): Promise<string> {
    const out = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    const arn = out.Table?.LatestStreamArn;
    if (!arn) throw new Error(`table ${tableName} has no stream`);
    return arn;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        try {
          await this.pollOnce();
        } catch (error) {
          this.options.logger?.warn('stream poll failed; retrying', { error: String(error) });
        }
        if (!this.running) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.intervalMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  /** One round over every shard. Returns how many stream records the handler accepted. */
  async pollOnce(): Promise<number> {
    await this.discoverShards();
    let accepted = 0;
    for (const [shardId, cursor] of this.shards) {
      if (cursor.done) continue;
      // A child shard is read only after its parent is finished, so one key's records stay in order.
      const parent = cursor.parent ? this.shards.get(cursor.parent) : undefined;
      if (parent && !parent.done) continue;
      accepted += await this.pollShard(shardId, cursor);
    }
    return accepted;
  }

  private async discoverShards(): Promise<void> {
    let exclusiveStartShardId: string | undefined;
    do {
      const out = await this.options.streams.send(
        new DescribeStreamCommand({
          StreamArn: this.options.streamArn,
          ...(exclusiveStartShardId ? { ExclusiveStartShardId: exclusiveStartShardId } : {}),
        }),
      );
      for (const shard of out.StreamDescription?.Shards ?? ([] as Shard[])) {
        if (!shard.ShardId || this.shards.has(shard.ShardId)) continue;
        this.shards.set(shard.ShardId, {
          ...(shard.ParentShardId ? { parent: shard.ParentShardId } : {}),
          done: false,
        });
      }
      exclusiveStartShardId = out.StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId);
  }

  private async iteratorFor(shardId: string, cursor: ShardCursor): Promise<string | undefined> {
    if (cursor.iterator) return cursor.iterator;
    const out = await this.options.streams.send(
      new GetShardIteratorCommand({
        StreamArn: this.options.streamArn,
        ShardId: shardId,
        ShardIteratorType: cursor.resume?.type ?? 'TRIM_HORIZON',
        ...(cursor.resume ? { SequenceNumber: cursor.resume.sequence } : {}),
      }),
    );
    return out.ShardIterator;
  }

  private async pollShard(shardId: string, cursor: ShardCursor): Promise<number> {
    const iterator = await this.iteratorFor(shardId, cursor);
    if (!iterator) {
      cursor.done = true;
      return 0;
    }
    let out: Awaited<ReturnType<typeof this.getRecords>>;
    try {
      out = await this.getRecords(iterator);
    } catch (error) {
      // An expired or trimmed iterator: ask for a fresh one from the last resume point next round.
      cursor.iterator = undefined;
      throw error;
    }
    const records = out.Records ?? [];
    if (records.length === 0) {
      cursor.iterator = out.NextShardIterator;
      if (!out.NextShardIterator) cursor.done = true;
      return 0;
    }
    const event: DynamoDBStreamEvent = {
      Records: records.map((r) => toLambdaRecord(r, this.options.streamArn, this.region)),
    };
    const firstFailed = await this.firstFailure(event);
    if (firstFailed !== undefined) {
      this.options.logger?.warn('stream records failed; reading them again next round', {
        shardId,
        sequenceNumber: firstFailed,
      });
      // Like the event source: checkpoint before the first failure and read it again next round.
      cursor.iterator = undefined;
      cursor.resume = { type: 'AT_SEQUENCE_NUMBER', sequence: firstFailed };
      const index = records.findIndex((r) => r.dynamodb?.SequenceNumber === firstFailed);
      return Math.max(index, 0);
    }
    const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
    if (last) cursor.resume = { type: 'AFTER_SEQUENCE_NUMBER', sequence: last };
    cursor.iterator = out.NextShardIterator;
    if (!out.NextShardIterator) cursor.done = true;
    return records.length;
  }

  private getRecords(iterator: string) {
    return this.options.streams.send(
      new GetRecordsCommand({ ShardIterator: iterator, Limit: this.batchSize }),
    );
  }

  /** The lowest sequence number the handler reported (or, when it threw, the first record's). */
  private async firstFailure(event: DynamoDBStreamEvent): Promise<string | undefined> {
    try {
      const response = await this.options.handler(event);
      const failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      if (failed.size === 0) return undefined;
      return event.Records.find((r) => failed.has(r.dynamodb?.SequenceNumber ?? ''))?.dynamodb
        ?.SequenceNumber;
    } catch (error) {
      this.options.logger?.warn('stream batch failed; it will be read again', { error: String(error) });
      return event.Records[0]?.dynamodb?.SequenceNumber;
    }
  }
}
