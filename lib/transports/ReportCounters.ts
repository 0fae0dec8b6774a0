import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { REPORT_BUCKET_MS, type ReportTally, reportsKey } from './reportLag.js';

/** How long a counter item stays (TTL): longer than the longest window a judgement reads (one day). */
export const REPORT_COUNTER_RETENTION_SECONDS = 2 * 86_400;

/** The counters as the stream consumer adds to them and the judgement reads them (lib/transports/reportLag.ts). */
export interface ReportCounterStore {
  /** One write: ADD the counts (negative to take back) onto the (provider, minute) item. */
  add(counter: ReportTally): Promise<void>;
  /** The counters of these minutes (a minute nobody wrote is zero). */
  read(provider: string, buckets: readonly number[]): Promise<ReportTally[]>;
}

/**
 * The report counters in the ledger table: one small item per provider and acceptance minute,
 * `reports#<provider>#<minute epoch ms>` with `accepted`, `reported` and a TTL. Written by the ledger
 * stream's consumer once per counter per batch (never per notification), read by the reconcile run.
 */
export class DynamoReportCounters implements ReportCounterStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async add(counter: ReportTally): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: reportsKey(counter.provider, counter.bucket) },
        UpdateExpression:
          'SET #kind = if_not_exists(#kind, :kind), #ttl = if_not_exists(#ttl, :ttl) ADD #accepted :a, #reported :r',
        ExpressionAttributeNames: {
          '#kind': 'kind',
          '#ttl': 'ttl',
          '#accepted': 'accepted',
          '#reported': 'reported',
        },
        ExpressionAttributeValues: {
          ':kind': 'provider_reports',
          ':ttl': Math.ceil((counter.bucket + REPORT_BUCKET_MS) / 1000) + REPORT_COUNTER_RETENTION_SECONDS,
          ':a': counter.accepted,
          ':r': counter.reported,
        },
      }),
    );
  }

  async read(provider: string, buckets: readonly number[]): Promise<ReportTally[]> {
    // A few small items per provider per run (20 for the default 30-minute window and 10-minute lag), read
    // in parallel with GetItem, which the reconcile role has: a BatchGetItem would need its own grant for
    // one call every five minutes.
    return Promise.all(
      buckets.map(async (bucket) => {
        const out = await this.client.send(
          new GetCommand({
            TableName: this.tableName,
            Key: { pk: reportsKey(provider, bucket) },
            ProjectionExpression: '#accepted, #reported',
            ExpressionAttributeNames: { '#accepted': 'accepted', '#reported': 'reported' },
          }),
        );
        const item = out.Item as { accepted?: number; reported?: number } | undefined;
        return { provider, bucket, accepted: item?.accepted ?? 0, reported: item?.reported ?? 0 };
      }),
    );
  }
}
