import { ConditionalCheckFailedException, type ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { sendResolved } from '../aws/resolvedCommands.js';
import { SendproofError, TransitionRefusedError } from '../domain/errors.js';
import type { Channel } from '../domain/purposes.js';
import { ATTENTION_STATES, canTransition, type DeliveryState, INITIAL_STATES } from '../domain/states.js';
import {
  ATTENTION_SHARDS,
  attentionPartitionOf,
  attentionPartitions,
  type PartitionQuery,
  readMergedPage,
  validateShards,
} from './attentionIndex.js';
import * as cancels from './cancelMarkers.js';
import { dropsDueTime } from './dueTime.js';
import { needsEvidencePointer } from './evidencePointer.js';
import type {
  AnnotationRequest,
  AttentionPage,
  CancelCommitResult,
  CancelMarker,
  CancelOrder,
  ClaimResult,
  DeliveryRecord,
  FallbackFlow,
  Ledger,
  SealedIntent,
  TransitionEntry,
  TransitionRequest,
  TransitionResult,
} from './port.js';
import { evidenceItemKey, LEDGER_TABLE, SEAL_PREFIX } from './tableDefinition.js';

/** States in which a lease (owner + expiry) guards the row. */
const LEASED_STATES: readonly DeliveryState[] = ['claimed', 'dispatching'];

const FLOW_PREFIX = 'flow#';
/** The attention-index partition of sealed, parked notifications (not a row state). */
const PARKED = 'parked';

const units = (capacity: ConsumedCapacity | undefined): number => capacity?.CapacityUnits ?? 0;

/** A delivery row that may still be sent, whose key no row label can carry (lib/domain/keys.ts). */
export { needsEvidencePointer };

/**
 * A failed condition returns the item as it stands (ReturnValuesOnConditionCheckFailure). The document
 * client does not unmarshall exception payloads, so this does.
 */
const oldItemOf = (error: ConditionalCheckFailedException): Record<string, unknown> | undefined =>
  error.Item ? (unmarshall(error.Item) as Record<string, unknown>) : undefined;

/**
 * The ledger on DynamoDB. Every write is conditional:
 * - claim: `attribute_not_exists(pk)` — the unique constraint that picks one owner;
 * - transition: `version = :expected AND state = :from` (plus lease expiry where asked) — so two workers
 *   can never both move the same row, and a stale reader's write is refused.
 * The happy path (claim written as dispatching → accepted) is two single-item writes of under 1 KB each
 * and touches no index: the attention index is written only when a row leaves the happy path.
 */
export class DynamoLedger implements Ledger {
  /** Attention-index shards (lib/ledger/attentionIndex.ts); every reader and writer of a table must agree. */
  private readonly attentionShards: number;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    options: { attentionShards?: number } = {},
  ) {
    this.attentionShards = validateShards(options.attentionShards ?? ATTENTION_SHARDS.default);
  }

  async claim(record: DeliveryRecord): Promise<ClaimResult> {
    const first = record.history[0];
    if (record.version !== 1 || record.history.length !== 1 || !first || first.s !== record.state) {
      throw new TransitionRefusedError(
        'a new row starts at version 1 with exactly one history entry for its state',
      );
    }
    if (!INITIAL_STATES.includes(record.state)) {
      throw new TransitionRefusedError(`a row cannot be created in state ${record.state}`);
    }
    // Provider evidence names its row by the row label sent with every message (lib/domain/keys.ts), so
    // the happy path writes no pointer. Only a row that may be sent and whose key is too long for a label
    // gets the pointer (key hash → dedupe key) — first, so no crash can leave a claimed row whose events
    // cannot find it. Idempotent: the hash is a function of the key, so a repeat writes the same value.
    const pointerUnits = needsEvidencePointer(record) ? await this.linkEvidence(record) : 0;
    try {
      // The two hot-path writes (claim, transition) reuse a middleware handler resolved once per client
      // and command class (lib/aws/resolvedCommands.ts); the request is the one `send` would make.
      const out = await sendResolved(this.client, PutCommand, {
        TableName: this.tableName,
        Item: record,
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': LEDGER_TABLE.partitionKey },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ReturnConsumedCapacity: 'TOTAL',
      });
      return { kind: 'claimed', record, consumedWriteUnits: units(out.ConsumedCapacity) + pointerUnits };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const existing = oldItemOf(error) as DeliveryRecord | undefined;
        // The item existed when the condition was evaluated, so it is returned with the failure.
        if (!existing)
          throw new SendproofError(
            'retryable',
            'claim_conflict_unread',
            `claim conflict on ${record.pk} returned no existing row`,
          );
        // A refused conditional write still consumes one write unit (items here are under 1 KB).
        return { kind: 'conflict', existing, consumedWriteUnits: 1 + pointerUnits };
      }
      throw error;
    }
  }

  /** `ev#<hash>`: `ref` = the dedupe key. Events already recorded under the hash are kept as they are. */
  private async linkEvidence(record: DeliveryRecord): Promise<number> {
    const out = await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: evidenceItemKey(record.idempotencyKey) },
        UpdateExpression: 'SET #ref = :ref, #kind = :kind',
        ExpressionAttributeNames: { '#ref': 'ref', '#kind': 'kind' },
        ExpressionAttributeValues: { ':ref': record.pk, ':kind': 'evidence' },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    return units(out.ConsumedCapacity);
  }

  async transition(request: TransitionRequest): Promise<TransitionResult> {
    const { pk, from, to, expectedVersion, now } = request;
    if (!canTransition(from, to)) {
      throw new TransitionRefusedError(`transition ${from} → ${to} is not in the state table (row ${pk})`);
    }
    const entry: TransitionEntry = {
      s: to,
      at: now,
      by: request.by,
      ...(request.why ? { why: request.why } : {}),
      ...(request.set?.providerMessageId ? { msg: request.set.providerMessageId } : {}),
      ...(request.set?.attempts !== undefined ? { n: request.set.attempts } : {}),
      ...(request.set?.transport ? { p: request.set.transport } : {}),
    };
    const names: Record<string, string> = {
      '#state': 'state',
      '#version': 'version',
      '#history': 'history',
      '#updatedAt': 'updatedAt',
    };
    const values: Record<string, unknown> = {
      ':to': to,
      ':from': from,
      ':expected': expectedVersion,
      ':one': 1,
      ':entry': [entry],
      ':now': now,
    };
    const sets = [
      '#state = :to',
      '#version = #version + :one',
      '#history = list_append(#history, :entry)',
      '#updatedAt = :now',
    ];
    const removes: string[] = [];
    for (const [key, value] of Object.entries(request.set ?? {})) {
      if (value === undefined) continue;
      names[`#${key}`] = key;
      values[`:${key}`] = value;
      sets.push(`#${key} = :${key}`);
    }
    // The sparse attention index: written on entering an attention state, cleared on leaving one, and
    // untouched otherwise (so the happy path never pays for an index write).
    const entersAttention = ATTENTION_STATES.includes(to);
    if (entersAttention || ATTENTION_STATES.includes(from)) {
      names['#attn'] = 'attn';
      names['#attnAt'] = 'attnAt';
    }
    if (entersAttention) {
      values[':attn'] = attentionPartitionOf(to, pk, this.attentionShards);
      values[':attnAt'] = to === 'retry_wait' && request.set?.nextAttemptAt ? request.set.nextAttemptAt : now;
      sets.push('#attn = :attn', '#attnAt = :attnAt');
    } else if (ATTENTION_STATES.includes(from)) {
      removes.push('#attn', '#attnAt');
    }
    if (!LEASED_STATES.includes(to)) {
      // Leaving the leased states: the lease means nothing any more; drop it rather than carry bytes.
      for (const key of ['leaseOwner', 'leaseUntil'] as const) {
        if (request.set?.[key] === undefined) {
          names[`#${key}`] = key;
          removes.push(`#${key}`);
        }
      }
    }
    if (dropsDueTime(request)) {
      names['#nextAttemptAt'] = 'nextAttemptAt';
      removes.push('#nextAttemptAt');
    }
    const conditions = ['#version = :expected', '#state = :from'];
    if (request.leaseExpiredBefore !== undefined) {
      names['#leaseUntil'] = 'leaseUntil';
      values[':leaseBefore'] = request.leaseExpiredBefore;
      conditions.push('(attribute_not_exists(#leaseUntil) OR #leaseUntil < :leaseBefore)');
    }
    if (request.evidenceId) {
      names['#evidenceIds'] = 'evidenceIds';
      values[':evidence'] = [request.evidenceId];
      values[':evidenceId'] = request.evidenceId;
      values[':none'] = [];
      sets.push('#evidenceIds = list_append(if_not_exists(#evidenceIds, :none), :evidence)');
      conditions.push('(attribute_not_exists(#evidenceIds) OR NOT contains(#evidenceIds, :evidenceId))');
    }
    try {
      const out = await sendResolved(this.client, UpdateCommand, {
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: pk },
        UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ReturnConsumedCapacity: 'TOTAL',
      });
      return {
        kind: 'ok',
        record: out.Attributes as DeliveryRecord,
        consumedWriteUnits: units(out.ConsumedCapacity),
      };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const current = oldItemOf(error) as DeliveryRecord | undefined;
        return { kind: 'stale', ...(current ? { current } : {}), consumedWriteUnits: 1 };
      }
      throw error;
    }
  }

  async get(pk: string, consistent = true): Promise<DeliveryRecord | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: pk },
        ConsistentRead: consistent,
      }),
    );
    return out.Item as DeliveryRecord | undefined;
  }

  /** Every shard of the state, merged oldest first; the cursor is composite (lib/ledger/attentionIndex.ts). */
  async listAttention(
    state: DeliveryState,
    options: { limit?: number; cursor?: string } = {},
  ): Promise<AttentionPage> {
    const page = await readMergedPage(
      attentionPartitions(state, this.attentionShards),
      this.queryAttentionPartition,
      options.limit ?? 25,
      options.cursor,
    );
    return {
      items: page.items as unknown as DeliveryRecord[],
      ...(page.cursor ? { cursor: page.cursor } : {}),
      consumedReadUnits: page.readUnits,
    };
  }

  private readonly queryAttentionPartition: PartitionQuery = async (partition, startKey, limit) => {
    const out = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: LEDGER_TABLE.attentionIndex.name,
        KeyConditionExpression: '#attn = :partition',
        ExpressionAttributeNames: { '#attn': LEDGER_TABLE.attentionIndex.partitionKey },
        ExpressionAttributeValues: { ':partition': partition },
        ScanIndexForward: true,
        Limit: limit,
        ReturnConsumedCapacity: 'TOTAL',
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    return {
      items: (out.Items ?? []) as Array<Record<string, unknown> & { pk: string }>,
      ...(out.LastEvaluatedKey ? { lastKey: out.LastEvaluatedKey } : {}),
      readUnits: units(out.ConsumedCapacity),
    };
  };

  async findWaitingByIdempotencyKey(
    idempotencyKey: string,
    states: readonly DeliveryState[] = ['unknown', 'quarantined'],
  ): Promise<{ record?: DeliveryRecord; consumedReadUnits: number }> {
    let consumedReadUnits = 0;
    // Every shard of each state (in parallel); the row is in at most one of them.
    const search = async (partition: string): Promise<DeliveryRecord | undefined> => {
      let startKey: Record<string, unknown> | undefined;
      do {
        const out = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            IndexName: LEDGER_TABLE.attentionIndex.name,
            KeyConditionExpression: '#attn = :partition',
            FilterExpression: '#key = :key',
            ExpressionAttributeNames: {
              '#attn': LEDGER_TABLE.attentionIndex.partitionKey,
              '#key': 'idempotencyKey',
            },
            ExpressionAttributeValues: { ':partition': partition, ':key': idempotencyKey },
            ReturnConsumedCapacity: 'TOTAL',
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
        );
        consumedReadUnits += units(out.ConsumedCapacity);
        const hit = out.Items?.[0] as DeliveryRecord | undefined;
        if (hit) return hit;
        startKey = out.LastEvaluatedKey;
      } while (startKey);
      return undefined;
    };
    for (const state of states) {
      const hits = await Promise.all(attentionPartitions(state, this.attentionShards).map(search));
      const hit = hits.find((h) => h !== undefined);
      // The index is eventually consistent: re-read the row itself before anyone acts on it.
      if (hit) return { record: (await this.get(hit.pk)) ?? hit, consumedReadUnits };
    }
    return { consumedReadUnits };
  }

  async park(seal: Omit<SealedIntent, 'pk' | 'kind' | 'resumes'>): Promise<void> {
    const item: SealedIntent & { attn: string; attnAt: number } = {
      ...seal,
      pk: `${SEAL_PREFIX}${seal.logicalKey}`,
      kind: 'seal',
      resumes: 0,
      attn: attentionPartitionOf(PARKED, `${SEAL_PREFIX}${seal.logicalKey}`, this.attentionShards),
      attnAt: seal.dueAt,
    };
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': LEDGER_TABLE.partitionKey },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // Sealed before: keep its ciphertext (the same identity carries the same content) and re-arm it.
      await this.rearm(seal.logicalKey, seal.dueAt, seal.reason);
    }
  }

  async rearm(logicalKey: string, dueAt: number, reason: string, resumed = false): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [LEDGER_TABLE.partitionKey]: `${SEAL_PREFIX}${logicalKey}` },
          UpdateExpression: `SET #attn = :parked, #attnAt = :due, #dueAt = :due, #reason = :reason${
            resumed ? ', #resumes = #resumes + :one' : ''
          }`,
          ConditionExpression: 'attribute_exists(#pk)',
          ExpressionAttributeNames: {
            '#pk': LEDGER_TABLE.partitionKey,
            '#attn': LEDGER_TABLE.attentionIndex.partitionKey,
            '#attnAt': LEDGER_TABLE.attentionIndex.sortKey,
            '#dueAt': 'dueAt',
            '#reason': 'reason',
            ...(resumed ? { '#resumes': 'resumes' } : {}),
          },
          ExpressionAttributeValues: {
            ':parked': attentionPartitionOf(PARKED, `${SEAL_PREFIX}${logicalKey}`, this.attentionShards),
            ':due': dueAt,
            ':reason': reason,
            ...(resumed ? { ':one': 1 } : {}),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async getSeal(logicalKey: string): Promise<SealedIntent | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: `${SEAL_PREFIX}${logicalKey}` },
        ConsistentRead: true,
      }),
    );
    return out.Item ? sealOf(out.Item) : undefined;
  }

  async release(logicalKey: string): Promise<void> {
    await this.client.send(
      new DeleteCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: `${SEAL_PREFIX}${logicalKey}` },
      }),
    );
  }

  async listDue(
    now: number,
    options: { limit?: number; cursor?: string } = {},
  ): Promise<{ items: SealedIntent[]; cursor?: string }> {
    // Sharded like the attention states (10k parked retries in an outage must not make one hot
    // partition), and bounded by the due time in the key condition: only due seals are read.
    const dueBy: PartitionQuery = async (partition, startKey, limit) => {
      const out = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: LEDGER_TABLE.attentionIndex.name,
          KeyConditionExpression: '#attn = :partition AND #attnAt <= :now',
          ExpressionAttributeNames: {
            '#attn': LEDGER_TABLE.attentionIndex.partitionKey,
            '#attnAt': LEDGER_TABLE.attentionIndex.sortKey,
          },
          ExpressionAttributeValues: { ':partition': partition, ':now': now },
          ScanIndexForward: true,
          Limit: limit,
          ReturnConsumedCapacity: 'TOTAL',
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      return {
        items: (out.Items ?? []) as Array<Record<string, unknown> & { pk: string }>,
        ...(out.LastEvaluatedKey ? { lastKey: out.LastEvaluatedKey } : {}),
        readUnits: units(out.ConsumedCapacity),
      };
    };
    const page = await readMergedPage(
      attentionPartitions(PARKED, this.attentionShards),
      dueBy,
      options.limit ?? 25,
      options.cursor,
    );
    return { items: page.items.map(sealOf), ...(page.cursor ? { cursor: page.cursor } : {}) };
  }

  async openFlow(logicalKey: string, order: Channel[]): Promise<FallbackFlow> {
    const flow: FallbackFlow = { pk: `${FLOW_PREFIX}${logicalKey}`, order, activeIndex: 0, version: 1 };
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...flow, kind: 'flow' },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': LEDGER_TABLE.partitionKey },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return flow;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const existing = oldItemOf(error) as (FallbackFlow & { kind: string }) | undefined;
        if (!existing)
          throw new SendproofError(
            'retryable',
            'flow_conflict_unread',
            `fallback flow ${logicalKey} conflict returned no item`,
          );
        return {
          pk: existing.pk,
          order: existing.order,
          activeIndex: existing.activeIndex,
          version: existing.version,
        };
      }
      throw error;
    }
  }

  async advanceFlow(
    logicalKey: string,
    fromIndex: number,
    expectedVersion: number,
  ): Promise<FallbackFlow | undefined> {
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [LEDGER_TABLE.partitionKey]: `${FLOW_PREFIX}${logicalKey}` },
          UpdateExpression: 'SET #active = :next, #version = #version + :one',
          ConditionExpression: '#active = :from AND #version = :expected AND size(#order) > :next',
          ExpressionAttributeNames: { '#active': 'activeIndex', '#version': 'version', '#order': 'order' },
          ExpressionAttributeValues: {
            ':from': fromIndex,
            ':next': fromIndex + 1,
            ':expected': expectedVersion,
            ':one': 1,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const item = out.Attributes as FallbackFlow;
      return { pk: item.pk, order: item.order, activeIndex: item.activeIndex, version: item.version };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }

  async getFlow(logicalKey: string): Promise<FallbackFlow | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [LEDGER_TABLE.partitionKey]: `${FLOW_PREFIX}${logicalKey}` },
        ConsistentRead: true,
      }),
    );
    const item = out.Item as FallbackFlow | undefined;
    return item
      ? { pk: item.pk, order: item.order, activeIndex: item.activeIndex, version: item.version }
      : undefined;
  }

  // Cancel markers and annotations: ./cancelMarkers.ts; the ledger only routes them to its table.
  commitCancel(
    tenant: string,
    eventId: string,
    order: CancelOrder,
    ttl: number,
  ): Promise<CancelCommitResult> {
    return cancels.commitCancel(this.client, this.tableName, tenant, eventId, order, ttl);
  }

  getCancelMarker(tenant: string, eventId: string): Promise<CancelMarker | undefined> {
    return cancels.getCancelMarker(this.client, this.tableName, tenant, eventId);
  }

  annotate(request: AnnotationRequest): Promise<boolean> {
    return cancels.annotate(this.client, this.tableName, request);
  }
}

/** The seal as the port describes it (without the index attributes). */
const sealOf = (item: Record<string, unknown>): SealedIntent => {
  const { attn: _a, attnAt: _t, ...seal } = item;
  return seal as unknown as SealedIntent;
};
