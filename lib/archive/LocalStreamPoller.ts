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
import { ConfigurationError } from '../domain/errors.js';
import type { ArchiveLogger } from './archiver.js';

export type StreamBatchHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | undefined>;

export interface LocalStreamPollerOptions {
  streams: DynamoDBStreamsClient;
  streamArn: string;
  handler: StreamBatchHandler;
  region?: string;
  /** Pause between polling rounds. */
  intervalMs?: number;
  /** Most records per handler call, like the event source's batch size (GetRecords allows 1,000). */
  batchSize?: number;
  /**
   * Like the event source's MaximumBatchingWindowInSeconds: records are held until `batchSize` have
   * gathered or the first held one has waited this long. 0 hands every GetRecords page over at once.
   */
  maxBatchingWindowMs?: number;
  /**
   * Like the event source's MaximumRetryAttempts: after this many failed retries of the same batch the
   * poller gives up on it, hands its coordinates to `onFailure` (the on-failure destination) and moves on.
   * Unset: retry for ever.
   */
  retryAttempts?: number;
  onFailure?: (batch: FailedBatchInfo) => Promise<void> | void;
  logger?: ArchiveLogger;
  now?: () => number;
}

/** What Lambda's on-failure destination receives for a stream batch (`DDBStreamBatchInfo`): coordinates. */
export interface FailedBatchInfo {
  shardId: string;
  startSequenceNumber: string;
  endSequenceNumber: string;
  approximateArrivalOfFirstRecord: string;
  approximateArrivalOfLastRecord: string;
  batchSize: number;
  streamArn: string;
}

interface ShardCursor {
  parent?: string;
  iterator?: string;
  /** Where to resume when a new iterator is needed (after a failure or an expired iterator). */
  resume?: { type: 'AT_SEQUENCE_NUMBER' | 'AFTER_SEQUENCE_NUMBER'; sequence: string };
  /** Records read but not yet handed over (the batching window). */
  pending: _Record[];
  pendingSince: number;
  /** The sequence number the last failed batch started at, and how often it failed in a row. */
  failing?: { sequence: string; count: number };
  /** The shard returned no next iterator: it is closed and fully read once `pending` is handed over. */
  closed?: boolean;
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
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(private readonly options: LocalStreamPollerOptions) {
    this.region = options.region ?? 'us-east-1';
    this.intervalMs = options.intervalMs ?? 200;
    this.batchSize = Math.min(options.batchSize ?? 100, 1000);
    this.windowMs = options.maxBatchingWindowMs ?? 0;
    this.now = options.now ?? Date.now;
  }

  /** Hands every held record over now (e.g. before stopping), ignoring the batching window. */
  async flush(): Promise<number> {
    await this.discoverShards();
    let accepted = 0;
    for (const [shardId, cursor] of this.shards)
      if (cursor.pending.length > 0) accepted += await this.dispatch(shardId, cursor);
    return accepted;
  }

  /** The table's current stream ARN (the table must have a stream). */
  static async streamArnOf(dynamo: DynamoDBClient, tableName: string): Promise<string> {
    const out = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    const arn = out.Table?.LatestStreamArn;
    if (!arn) throw new ConfigurationError(`table ${tableName} has no stream`);
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
          pending: [],
          pendingSince: 0,
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
    if (!cursor.closed && cursor.pending.length < this.batchSize) {
      const iterator = await this.iteratorFor(shardId, cursor);
      if (!iterator) {
        cursor.closed = true;
      } else {
        let out: Awaited<ReturnType<typeof this.getRecords>>;
        try {
          out = await this.getRecords(iterator, this.batchSize - cursor.pending.length);
        } catch (error) {
          // An expired or trimmed iterator: ask for a fresh one from the last resume point next round
          // (the held records are read again from there).
          cursor.iterator = undefined;
          cursor.pending = [];
          throw error;
        }
        const records = out.Records ?? [];
        if (records.length > 0 && cursor.pending.length === 0) cursor.pendingSince = this.now();
        cursor.pending.push(...records);
        cursor.iterator = out.NextShardIterator;
        if (!out.NextShardIterator) cursor.closed = true;
      }
    }
    if (cursor.pending.length === 0) {
      if (cursor.closed) cursor.done = true;
      return 0;
    }
    const full = cursor.pending.length >= this.batchSize;
    const waited = this.now() - cursor.pendingSince >= this.windowMs;
    if (!full && !waited && !cursor.closed) return 0;
    return this.dispatch(shardId, cursor);
  }

  private async dispatch(shardId: string, cursor: ShardCursor): Promise<number> {
    const records = cursor.pending;
    cursor.pending = [];
    const event: DynamoDBStreamEvent = {
      Records: records.map((r) => toLambdaRecord(r, this.options.streamArn, this.region)),
    };
    const firstFailed = await this.firstFailure(event);
    if (firstFailed !== undefined) {
      const index = Math.max(
        records.findIndex((r) => r.dynamodb?.SequenceNumber === firstFailed),
        0,
      );
      const count = cursor.failing?.sequence === firstFailed ? cursor.failing.count + 1 : 1;
      cursor.iterator = undefined;
      cursor.closed = false;
      if (this.options.retryAttempts !== undefined && count > this.options.retryAttempts) {
        // Retries exhausted: like the event source, send the failed records' coordinates to the failure
        // destination and continue after them. The transitions are NOT archived: the backfill must.
        const failed = records.slice(index);
        const arrival = (r: _Record | undefined) =>
          (r?.dynamodb?.ApproximateCreationDateTime ?? new Date(this.now())).toISOString();
        await this.options.onFailure?.({
          shardId,
          startSequenceNumber: firstFailed,
          endSequenceNumber: failed[failed.length - 1]?.dynamodb?.SequenceNumber ?? firstFailed,
          approximateArrivalOfFirstRecord: arrival(failed[0]),
          approximateArrivalOfLastRecord: arrival(failed[failed.length - 1]),
          batchSize: failed.length,
          streamArn: this.options.streamArn,
        });
        this.options.logger?.error('stream records given up after the retry budget', {
          shardId,
          sequenceNumber: firstFailed,
          records: failed.length,
        });
        cursor.failing = undefined;
        const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
        if (last) cursor.resume = { type: 'AFTER_SEQUENCE_NUMBER', sequence: last };
        return index;
      }
      this.options.logger?.warn('stream records failed; reading them again next round', {
        shardId,
        sequenceNumber: firstFailed,
      });
      // Like the event source: checkpoint before the first failure and read it again next round.
      cursor.failing = { sequence: firstFailed, count };
      cursor.resume = { type: 'AT_SEQUENCE_NUMBER', sequence: firstFailed };
      return index;
    }
    cursor.failing = undefined;
    const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
    if (last) cursor.resume = { type: 'AFTER_SEQUENCE_NUMBER', sequence: last };
    if (cursor.closed) cursor.done = true;
    return records.length;
  }

  private getRecords(iterator: string, limit: number) {
    return this.options.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: limit }));
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
