import { ConditionalCheckFailedException, type ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DeliveryRecord } from '../ledger/port.js';
import { evidenceItemKey, LEDGER_TABLE } from '../ledger/tableDefinition.js';
import type { Evidence, EvidenceSource } from './events.js';
import { type DeliveryFactEntry, type EvidenceFact, expandFact, holdsEvidence, withFact } from './facts.js';

/** One provider event as the evidence item keeps it: everything needed to apply it later, no address. */
export interface StoredEvent {
  id: string;
  src: EvidenceSource;
  f: EvidenceFact;
  why: string;
  msg: string;
  /** Provider time if the event had one, else the recording time (epoch ms). */
  at: number;
  /** Recording time (epoch ms). */
  rec: number;
}

export interface AppendResult {
  /**
   * The dedupe key the hash belongs to: the row key the event named (its row label), else the pointer a
   * claim wrote; absent when neither says which row this hash is.
   */
  ref?: string;
  events: StoredEvent[];
  /** This provider event id was already recorded under the hash. */
  duplicate: boolean;
  /** The item holds MAX_EVENTS_PER_KEY events already: this one was not added (logged by the recorder). */
  full?: boolean;
  /** The item's TTL (epoch seconds) after the write, if it has one. */
  ttl?: number;
  consumedReadUnits: number;
}

export type FactWriteResult =
  | { kind: 'ok'; record: DeliveryRecord }
  | { kind: 'duplicate' }
  | { kind: 'stale'; current?: DeliveryRecord };

/** Most events one `ev#<hash>` item keeps (it stays far below DynamoDB's 400 KB item limit). */
export const MAX_EVENTS_PER_KEY = 50;

/** The evidence store: one item per key hash in the ledger table (`ev#<hash>`). */
export interface EvidenceStore {
  /**
   * Records the event once (by provider event id) and returns the row key and all events: a write, no read.
   * `ttl` (epoch seconds): when the item expires — the row's retention, once the row is known; an
   * engagement (open, click) is recorded once per message; at MAX_EVENTS_PER_KEY events nothing more is.
   */
  append(evidence: Evidence, now: number, options?: { ttl?: number }): Promise<AppendResult>;
  /**
   * Marks a row that has no outcome yet as holding kept evidence (`evk`), conditioned on its state and
   * version: no version bump, no history entry. Stale: the row moved; the recorder reads it again.
   */
  markKept(row: DeliveryRecord): Promise<{ kind: 'ok' } | { kind: 'stale'; current?: DeliveryRecord }>;
  /** The item expires with its row (the row's retention, epoch seconds). */
  expireWith(idempotencyKey: string, ttl: number): Promise<void>;
  /** The events of a hash no row of ours carries expire (30 days); never on a hash a claim linked. */
  expireUnmatched(idempotencyKey: string, now: number): Promise<void>;
  /** All events recorded for a key hash: one strongly consistent GetItem. */
  eventsFor(
    idempotencyKey: string,
  ): Promise<{ ref?: string; events: StoredEvent[]; consumedReadUnits: number }>;
  /** The row itself (strongly consistent), with the read units it cost. */
  getRow(pk: string): Promise<{ row?: DeliveryRecord; consumedReadUnits: number }>;
  /**
   * Adds one post-acceptance fact to the row's `delivery` attribute, once (conditioned on the event id not
   * being recorded, on the state, and on the fact count read, so concurrent facts are never lost).
   */
  addFact(row: DeliveryRecord, entry: DeliveryFactEntry): Promise<FactWriteResult>;
  /** A durable cursor (pull evidence): one item per provider. */
  getCursor(name: string): Promise<{ cursor?: string; version: number }>;
  /** Moves the cursor, conditioned on the version read; false when another poller moved it first. */
  putCursor(name: string, cursor: string, expectedVersion: number, now: number): Promise<boolean>;
}

const units = (capacity: ConsumedCapacity | undefined): number => capacity?.CapacityUnits ?? 0;

/** How long events for a hash no claim of ours carries are kept (they are unmatched; 30 days). */
const UNMATCHED_TTL_SECONDS = 30 * 86_400;

export class DynamoEvidenceStore implements EvidenceStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async append(evidence: Evidence, now: number, options: { ttl?: number } = {}): Promise<AppendResult> {
    const stored: StoredEvent = {
      // Opens and clicks repeat (each has its own provider id): one per message is all evidence needs.
      id:
        evidence.fact === 'engaged'
          ? `${evidence.source}:${evidence.providerMessageId}:engaged`
          : evidence.evidenceId,
      src: evidence.source,
      f: evidence.fact,
      why: evidence.why,
      msg: evidence.providerMessageId,
      at: evidence.at ?? now,
      rec: now,
    };
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [LEDGER_TABLE.partitionKey]: evidenceItemKey(evidence.idempotencyKey) },
          UpdateExpression:
            'SET #events = list_append(if_not_exists(#events, :none), :event), ' +
            `#ids = list_append(if_not_exists(#ids, :none), :id), #kind = :kind, #updatedAt = :now${options.ttl !== undefined ? ', #ttl = :ttl' : ''}`,
          ConditionExpression:
            'attribute_not_exists(#ids) OR (NOT contains(#ids, :idValue) AND size(#ids) < :max)',
          ExpressionAttributeNames: {
            '#events': 'events',
            '#ids': 'eventIds',
            '#kind': 'kind',
            '#updatedAt': 'updatedAt',
            ...(options.ttl !== undefined ? { '#ttl': 'ttl' } : {}),
          },
          ExpressionAttributeValues: {
            ':none': [],
            ':event': [stored],
            ':id': [stored.id],
            ':idValue': stored.id,
            ':kind': 'evidence',
            ':now': now,
            ':max': MAX_EVENTS_PER_KEY,
            ...(options.ttl !== undefined ? { ':ttl': options.ttl } : {}),
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      const item = out.Attributes ?? {};
      const ref = typeof item.ref === 'string' ? item.ref : evidence.rowKey;
      // Events for a hash no claim of ours carries expire; a claimed hash keeps its events.
      if (ref === undefined && item.ttl === undefined)
        await this.expireUnmatched(evidence.idempotencyKey, now);
      return {
        ...(ref !== undefined ? { ref } : {}),
        events: (item.events ?? []) as StoredEvent[],
        duplicate: false,
        ...(typeof item.ttl === 'number' ? { ttl: item.ttl } : {}),
        consumedReadUnits: 0,
      };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const item = error.Item ? unmarshall(error.Item) : {};
        const ref = typeof item.ref === 'string' ? item.ref : evidence.rowKey;
        const ids = (item.eventIds ?? []) as string[];
        return {
          ...(ref !== undefined ? { ref } : {}),
          events: (item.events ?? []) as StoredEvent[],
          duplicate: ids.includes(stored.id),
          ...(ids.includes(stored.id) ? {} : { full: true }),
          ...(typeof item.ttl === 'number' ? { ttl: item.ttl } : {}),
          consumedReadUnits: 0,
        };
      }
      throw error;
    }
  }

  async expireWith(idempotencyKey: string, ttl: number): Promise<void> {
    await this.client
      .send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [LEDGER_TABLE.partitionKey]: evidenceItemKey(idempotencyKey) },
          UpdateExpression: 'SET #ttl = :ttl',
          ConditionExpression: 'attribute_exists(#pk)',
          ExpressionAttributeNames: { '#ttl': 'ttl', '#pk': LEDGER_TABLE.partitionKey },
          ExpressionAttributeValues: { ':ttl': ttl },
        }),
      )
      .catch((error) => {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      });
  }

  async expireUnmatched(idempotencyKey: string, now: number): Promise<void> {
    await this.client
      .send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [LEDGER_TABLE.partitionKey]: evidenceItemKey(idempotencyKey) },
          UpdateExpression: 'SET #ttl = :ttl',
          // Never on an item a claim has linked meanwhile, and once.
          ConditionExpression: 'attribute_not_exists(#ref) AND attribute_not_exists(#ttl)',
          ExpressionAttributeNames: { '#ttl': 'ttl', '#ref': 'ref' },
          ExpressionAttributeValues: { ':ttl': Math.floor(now / 1000) + UNMATCHED_TTL_SECONDS },
        }),
      )
      .catch((error) => {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      });
  }

  async eventsFor(idempotencyKey: string) {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: evidenceItemKey(idempotencyKey) },
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    const item = out.Item ?? {};
    return {
      ...(typeof item.ref === 'string' ? { ref: item.ref } : {}),
      events: (item.events ?? []) as StoredEvent[],
      consumedReadUnits: units(out.ConsumedCapacity),
    };
  }

  async getRow(pk: string) {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: pk },
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    return {
      ...(out.Item ? { row: out.Item as DeliveryRecord } : {}),
      consumedReadUnits: units(out.ConsumedCapacity),
    };
  }

  async markKept(row: DeliveryRecord) {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [LEDGER_TABLE.partitionKey]: row.pk },
          UpdateExpression: 'SET #evk = :true',
          ConditionExpression: '#state = :state AND #version = :version',
          ExpressionAttributeNames: { '#evk': 'evk', '#state': 'state', '#version': 'version' },
          ExpressionAttributeValues: { ':true': true, ':state': row.state, ':version': row.version },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'ok' as const };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const current = error.Item ? (unmarshall(error.Item) as DeliveryRecord) : undefined;
        return { kind: 'stale' as const, ...(current ? { current } : {}) };
      }
      throw error;
    }
  }

  /**
   * The fact's id is kept in `delivery.h` itself (compact), not in `evidenceIds`: the write is conditioned
   * on the fact count read, so an event recorded meanwhile by another writer makes it stale, and the row
   * read again shows the id. One small attribute per fact keeps the row within one write unit.
   */
  async addFact(row: DeliveryRecord, entry: DeliveryFactEntry): Promise<FactWriteResult> {
    const id = expandFact(entry, row.providerMessageId).id;
    if (holdsEvidence(row, id)) return { kind: 'duplicate' };
    const count = row.delivery?.n ?? 0;
    const next = { ...withFact(row.delivery, entry), n: count + 1 };
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [LEDGER_TABLE.partitionKey]: row.pk },
          UpdateExpression: 'SET #delivery = :delivery',
          ConditionExpression:
            '#state = :state AND ' +
            (count === 0 ? 'attribute_not_exists(#delivery)' : '#delivery.#n = :count'),
          ExpressionAttributeNames: {
            '#delivery': 'delivery',
            '#state': 'state',
            ...(count === 0 ? {} : { '#n': 'n' }),
          },
          ExpressionAttributeValues: {
            ':delivery': next,
            ':state': row.state,
            ...(count === 0 ? {} : { ':count': count }),
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'ok', record: out.Attributes as DeliveryRecord };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const current = error.Item ? (unmarshall(error.Item) as DeliveryRecord) : undefined;
        if (current && holdsEvidence(current, id)) return { kind: 'duplicate' };
        return { kind: 'stale', ...(current ? { current } : {}) };
      }
      throw error;
    }
  }

  async getCursor(name: string) {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: `cursor#${name}` },
        ConsistentRead: true,
      }),
    );
    const item = out.Item;
    return {
      ...(typeof item?.cursor === 'string' ? { cursor: item.cursor } : {}),
      version: typeof item?.version === 'number' ? item.version : 0,
    };
  }

  async putCursor(name: string, cursor: string, expectedVersion: number, now: number): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            [LEDGER_TABLE.partitionKey]: `cursor#${name}`,
            kind: 'cursor',
            cursor,
            version: expectedVersion + 1,
            updatedAt: now,
          },
          ConditionExpression: expectedVersion === 0 ? 'attribute_not_exists(#pk)' : '#version = :expected',
          ExpressionAttributeNames:
            expectedVersion === 0 ? { '#pk': LEDGER_TABLE.partitionKey } : { '#version': 'version' },
          ...(expectedVersion === 0 ? {} : { ExpressionAttributeValues: { ':expected': expectedVersion } }),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}
