import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { LEDGER_TABLE } from '../ledger/tableDefinition.js';

/** The ledger item that carries the reconcile loop's position from one scheduled run to the next. */
export const RUN_CURSOR_PK = 'reconcile#cursor';

/** Long enough to outlive any pause between runs; a cursor older than this restarts from the oldest row. */
const RUN_CURSOR_TTL_SECONDS = 86_400;

/**
 * Where the reconcile loop stopped. EventBridge Scheduler inputs are static, so the Step Functions run
 * that spent its page budget cannot hand its cursor to the next run; the reconcile function keeps it in
 * one small ledger item instead:
 *
 * - after every page it saves the page's cursor (none when the attention index was read to its end), so
 *   a run that stops at its page budget, times out or fails leaves the position of its last page;
 * - the first page of the next run (an input without a cursor) starts from the saved position;
 * - when a run reads to the end, the saved position is cleared and the next run starts again from the
 *   oldest row, so rows the earlier runs visited and left are visited again within one cycle.
 *
 * The item has no state and no history: stats, status and the archive skip it, as they skip flow pointers.
 */
export interface RunCursorStore {
  load(now: number): Promise<string | undefined>;
  save(cursor: string | undefined, now: number): Promise<void>;
}

export class DynamoRunCursor implements RunCursorStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async load(now: number): Promise<string | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: RUN_CURSOR_PK },
        ConsistentRead: true,
      }),
    );
    const item = out.Item as { cursor?: unknown; ttl?: unknown } | undefined;
    // DynamoDB deletes expired items late (up to days): an expired position is not used.
    if (typeof item?.ttl === 'number' && item.ttl * 1000 < now) return undefined;
    return typeof item?.cursor === 'string' && item.cursor ? item.cursor : undefined;
  }

  async save(cursor: string | undefined, now: number): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          [LEDGER_TABLE.partitionKey]: RUN_CURSOR_PK,
          kind: 'reconcile-cursor',
          ...(cursor ? { cursor } : {}),
          updatedAt: now,
          [LEDGER_TABLE.ttlAttribute]: Math.floor(now / 1000) + RUN_CURSOR_TTL_SECONDS,
        },
      }),
    );
  }
}
