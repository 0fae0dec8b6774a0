import { type DynamoDBDocumentClient, ScanCommand, type ScanCommandInput } from '@aws-sdk/lib-dynamodb';
import type { ItemSummary, OperatorQueries } from './operatorQueries.js';
import type { DeliveryRecord } from './port.js';

const encode = (key: Record<string, unknown>): string =>
  Buffer.from(JSON.stringify(key)).toString('base64url');
const decode = (cursor: string): Record<string, unknown> => {
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (key && typeof key === 'object' && !Array.isArray(key)) return key as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new RangeError('scan cursor is not one these queries wrote');
};

/** The operator queries on DynamoDB: paginated Scans of the ledger table (lib/ledger/operatorQueries.ts). */
const NOT_ROWS = new Set(['breaker', 'provider_health']);

export class DynamoOperatorQueries implements OperatorQueries {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  private async scanAll<T>(input: Omit<ScanCommandInput, 'TableName' | 'ExclusiveStartKey'>): Promise<T[]> {
    const found: T[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await this.client.send(
        new ScanCommand({
          ...input,
          TableName: this.tableName,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      found.push(...((out.Items ?? []) as T[]));
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return found;
  }

  async findByEvent(eventId: string): Promise<DeliveryRecord[]> {
    const found = await this.scanAll<DeliveryRecord>({
      FilterExpression: '#eventId = :eventId',
      ExpressionAttributeNames: { '#eventId': 'eventId' },
      ExpressionAttributeValues: { ':eventId': eventId },
    });
    return found.sort((a, b) => a.createdAt - b.createdAt || a.pk.localeCompare(b.pk));
  }

  async summaries(cursor?: string): Promise<{ items: ItemSummary[]; cursor?: string }> {
    const out = await this.client.send(
      new ScanCommand({
        TableName: this.tableName,
        // pk, failures, openUntil and reason: read on provider-health items (a scan is charged by item size).
        ProjectionExpression: '#s, attnAt, createdAt, #k, pk, failures, openUntil, #r',
        ExpressionAttributeNames: { '#s': 'state', '#k': 'kind', '#r': 'reason' },
        ...(cursor ? { ExclusiveStartKey: decode(cursor) } : {}),
      }),
    );
    return {
      items: (out.Items ?? []) as ItemSummary[],
      ...(out.LastEvaluatedKey ? { cursor: encode(out.LastEvaluatedKey) } : {}),
    };
  }

  async rows(): Promise<DeliveryRecord[]> {
    // Breaker and provider-health items have a state too, but they are not rows.
    return (await this.scanAll<DeliveryRecord>({})).filter(
      (r) => r.state !== undefined && !NOT_ROWS.has(String(r.kind)),
    );
  }
}
