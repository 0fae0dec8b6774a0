import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { LookupResult, SendResult } from '../lib/transports/port.js';

/**
 * Two ways to make sends idempotent that Sendproof is compared against, written here only (never used by
 * the product). Both drive the same provider calls as the dispatcher for each scenario, so the write
 * units differ only by the bookkeeping pattern.
 */

/** One channel of one notification, as a baseline sees it: a key and the provider calls it may make. */
export interface BaselineChannel {
  key: string;
  send(): Promise<SendResult>;
  lookup(): Promise<LookupResult>;
}

export interface BaselineOutcome {
  /** The last provider answer per channel, in the order tried. */
  results: SendResult['kind'][];
  /** Transition history kept (items or entries) for the notification. */
  historyEntries: number;
  /** Provider sends made (a resend of an ambiguous request counts). */
  sends: number;
}

const MAX_INVOCATIONS = 5;

// ───────────────────────────── (a) Powertools-style idempotency record ─────────────────────────────

export const powertoolsTableInput = (name: string): CreateTableCommandInput => ({
  TableName: name,
  BillingMode: 'PAY_PER_REQUEST',
  AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
  KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
});

/**
 * The persistence pattern of @aws-lambda-powertools/idempotency's DynamoDB layer: a conditional
 * in-progress put, an (unconditional) update to COMPLETED with the response, and an (unconditional)
 * delete when the wrapped function throws, so the redelivery runs it again. No history is kept.
 *
 *   put INPROGRESS ─► send ─► accepted/rejected ─► update COMPLETED
 *                        └──► 429 / lost answer ─► delete ─► (redelivery) put INPROGRESS ─► send …
 */
export class PowertoolsStyleRecord {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  private async saveInProgress(id: string, nowMs: number): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          id,
          status: 'INPROGRESS',
          expiration: Math.floor(nowMs / 1000) + 3600,
          in_progress_expiration: nowMs + 60_000,
        },
        ConditionExpression:
          'attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress AND #ipx < :nowMs)',
        ExpressionAttributeNames: {
          '#id': 'id',
          '#expiry': 'expiration',
          '#status': 'status',
          '#ipx': 'in_progress_expiration',
        },
        ExpressionAttributeValues: {
          ':now': Math.floor(nowMs / 1000),
          ':nowMs': nowMs,
          ':inprogress': 'INPROGRESS',
        },
      }),
    );
  }

  private async saveSuccess(id: string, result: SendResult, nowMs: number): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { id },
        UpdateExpression: 'SET #data = :data, #expiry = :expiry, #status = :completed',
        ExpressionAttributeNames: { '#data': 'data', '#expiry': 'expiration', '#status': 'status' },
        ExpressionAttributeValues: {
          ':data': JSON.stringify(result),
          ':expiry': Math.floor(nowMs / 1000) + 3600,
          ':completed': 'COMPLETED',
        },
      }),
    );
  }

  private async deleteRecord(id: string): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.table, Key: { id } }));
  }

  /** One channel: invocations until a definitive answer. A lost answer is simply sent again. */
  async deliverChannel(channel: BaselineChannel): Promise<{ result: SendResult; sends: number }> {
    let sends = 0;
    for (let invocation = 1; ; invocation++) {
      await this.saveInProgress(channel.key, Date.now());
      const result = await channel.send();
      sends += 1;
      if (result.kind === 'accepted' || result.kind === 'rejected' || invocation >= MAX_INVOCATIONS) {
        await this.saveSuccess(channel.key, result, Date.now());
        return { result, sends };
      }
      // The wrapped function threw (429, lost answer): Powertools deletes the record so a retry may run.
      await this.deleteRecord(channel.key);
    }
  }

  async deliver(
    channels: readonly BaselineChannel[],
    delivery: 'all' | 'fallback',
  ): Promise<BaselineOutcome> {
    const results: SendResult['kind'][] = [];
    let sends = 0;
    for (const channel of channels) {
      const outcome = await this.deliverChannel(channel);
      results.push(outcome.result.kind);
      sends += outcome.sends;
      if (delivery === 'fallback' && outcome.result.kind !== 'rejected') break;
    }
    return { results, historyEntries: 0, sends };
  }
}

// ──────────────────────── (b) head item + transition items, TransactWriteItems ────────────────────────

export const transactHistoryTableInput = (name: string): CreateTableCommandInput => ({
  TableName: name,
  BillingMode: 'PAY_PER_REQUEST',
  AttributeDefinitions: [
    { AttributeName: 'pk', AttributeType: 'S' },
    { AttributeName: 'sk', AttributeType: 'S' },
  ],
  KeySchema: [
    { AttributeName: 'pk', KeyType: 'HASH' },
    { AttributeName: 'sk', KeyType: 'RANGE' },
  ],
});

const HEAD = 'head';
const entryKey = (version: number) => `t#${String(version).padStart(5, '0')}`;

/**
 * The "full history as separate items" design: a head item holds the current state and version, and
 * every transition writes the head and a new transition item in one TransactWriteItems, both conditioned.
 * The fallback pointer is a plain conditional put/update, as the ledger's is.
 */
export class TransactHistoryLedger {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly by = 'baseline:transact',
  ) {}

  private async claim(pk: string, fields: Record<string, unknown>): Promise<void> {
    const at = Date.now();
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.table,
              Item: { pk, sk: HEAD, state: 'claimed', version: 1, ...fields, createdAt: at, updatedAt: at },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: this.table,
              Item: { pk, sk: entryKey(1), s: 'claimed', at, by: this.by, why: 'intent_received' },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
  }

  private async transition(pk: string, from: string, to: string, version: number, why: string) {
    const at = Date.now();
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: this.table,
              Key: { pk, sk: HEAD },
              UpdateExpression: 'SET #state = :to, #version = :next, #updatedAt = :at',
              ConditionExpression: '#state = :from AND #version = :expected',
              ExpressionAttributeNames: {
                '#state': 'state',
                '#version': 'version',
                '#updatedAt': 'updatedAt',
              },
              ExpressionAttributeValues: {
                ':to': to,
                ':from': from,
                ':expected': version,
                ':next': version + 1,
                ':at': at,
              },
            },
          },
          {
            Put: {
              TableName: this.table,
              Item: { pk, sk: entryKey(version + 1), s: to, at, by: this.by, why },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
    return version + 1;
  }

  private async openFlow(logicalKey: string, order: readonly string[]): Promise<void> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk: `flow#${logicalKey}`, sk: HEAD, order, activeIndex: 0, version: 1 },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  private async advanceFlow(logicalKey: string, fromIndex: number): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: `flow#${logicalKey}`, sk: HEAD },
        UpdateExpression: 'SET #active = :next, #version = #version + :one',
        ConditionExpression: '#active = :from',
        ExpressionAttributeNames: { '#active': 'activeIndex', '#version': 'version' },
        ExpressionAttributeValues: { ':from': fromIndex, ':next': fromIndex + 1, ':one': 1 },
      }),
    );
  }

  /** Mirrors the dispatcher's phases: claim → dispatching → outcome, retry_wait loops, unknown → lookup. */
  async deliverChannel(
    channel: BaselineChannel,
    fields: Record<string, unknown>,
  ): Promise<{ result: SendResult['kind']; entries: number; sends: number }> {
    await this.claim(channel.key, fields);
    let state = 'claimed';
    let version = 1;
    let sends = 0;
    for (let attempt = 1; ; attempt++) {
      version = await this.transition(
        channel.key,
        state,
        'dispatching',
        version,
        attempt === 1 ? 'gates_passed' : 'retry',
      );
      state = 'dispatching';
      const result = await channel.send();
      sends += 1;
      if (result.kind === 'accepted' || result.kind === 'rejected' || attempt >= MAX_INVOCATIONS) {
        const to = result.kind === 'accepted' ? 'accepted' : 'rejected';
        version = await this.transition(channel.key, state, to, version, `provider_${result.kind}`);
        return { result: result.kind, entries: version, sends };
      }
      if (result.kind === 'retryable') {
        version = await this.transition(channel.key, state, 'retry_wait', version, 'retryable');
        state = 'retry_wait';
        continue;
      }
      // Ambiguous: unknown, then the reconciler's lookup decides.
      version = await this.transition(channel.key, state, 'unknown', version, 'ambiguous');
      state = 'unknown';
      const found = await channel.lookup();
      const to = found.kind === 'accepted' ? 'accepted' : 'rejected';
      version = await this.transition(channel.key, state, to, version, `lookup_${found.kind}`);
      return { result: found.kind === 'accepted' ? 'accepted' : 'rejected', entries: version, sends };
    }
  }

  async deliver(
    logicalKey: string,
    channels: readonly BaselineChannel[],
    delivery: 'all' | 'fallback',
    fields: Record<string, unknown>,
  ): Promise<BaselineOutcome> {
    const results: SendResult['kind'][] = [];
    let historyEntries = 0;
    let sends = 0;
    if (delivery === 'fallback')
      await this.openFlow(
        logicalKey,
        channels.map((_, i) => String(i)),
      );
    for (const [index, channel] of channels.entries()) {
      const outcome = await this.deliverChannel(channel, fields);
      results.push(outcome.result);
      historyEntries += outcome.entries;
      sends += outcome.sends;
      if (delivery !== 'fallback') continue;
      if (outcome.result !== 'rejected') break;
      if (index < channels.length - 1) await this.advanceFlow(logicalKey, index);
    }
    return { results, historyEntries, sends };
  }
}
