import { TransitionRefusedError } from '../domain/errors.js';
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
import { cancelMarkerKey } from './cancelMarkers.js';
import { dropsDueTime } from './dueTime.js';
import { needsEvidencePointer } from './evidencePointer.js';
import type { ItemSummary, OperatorQueries } from './operatorQueries.js';
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
import { evidenceItemKey, LEDGER_TABLE } from './tableDefinition.js';

/** States in which a lease (owner + expiry) guards the row (the same list DynamoLedger keeps). */
const LEASED_STATES: readonly DeliveryState[] = ['claimed', 'dispatching'];
const FLOW_PREFIX = 'flow#';
const SEAL_PREFIX = 'seal#';
const PARKED = 'parked';

type Item = Record<string, unknown> & { pk: string };

/**
 * What a DynamoDB round trip does to a value: a copy (no caller can mutate a stored row), undefined
 * attributes dropped (the document client's `removeUndefinedValues`).
 */
const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

const sortValue = (item: Item): number => Number(item[LEDGER_TABLE.attentionIndex.sortKey] ?? 0);
const byIndexOrder = (a: Item, b: Item): number =>
  sortValue(a) - sortValue(b) || (a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0);

/**
 * The ledger in memory: one map of items standing in for the table, with the conditions DynamoLedger
 * asks DynamoDB to check (claim: key absent; transition: state + version, optional lease expiry and
 * evidence id; flow: index + version) evaluated here, each write atomic because nothing awaits between
 * its check and its write. The attention index is the same sparse, sharded `attn`/`attnAt` pair, read
 * through the same merge (lib/ledger/attentionIndex.ts), so cursors and order match.
 *
 * A real implementation of the port for decision tests that need no server, not a mock: the ledger
 * contract suite (test/contract/ledger.contract.ts) runs every case against this and DynamoDB Local.
 * It also answers the operator queries (findByEvent, summaries, rows). Capacity units are always 0
 * here; what DynamoDB charges is proven against DynamoDB Local only. The evidence pointer
 * (`ev#<hash>`) is written with the claim under the same rule as on DynamoDB; reading it is the evidence store's business
 * (lib/evidence/DynamoEvidenceStore.ts).
 */
export class MemoryLedger implements Ledger, OperatorQueries {
  private readonly items = new Map<string, Item>();
  private readonly attentionShards: number;

  constructor(options: { attentionShards?: number } = {}) {
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
    // The evidence pointer first (key hash → dedupe key), under the same rule as DynamoLedger (only a
    // sendable row whose key is too long for a label): idempotent, events already recorded are kept.
    if (needsEvidencePointer(record)) {
      const pointer = evidenceItemKey(record.idempotencyKey);
      this.items.set(pointer, { ...this.items.get(pointer), pk: pointer, ref: record.pk, kind: 'evidence' });
    }
    const existing = this.items.get(record.pk);
    if (existing)
      return {
        kind: 'conflict',
        existing: copy(existing) as unknown as DeliveryRecord,
        consumedWriteUnits: 0,
      };
    const stored = copy(record) as unknown as Item;
    this.items.set(record.pk, stored);
    return { kind: 'claimed', record: copy(stored) as unknown as DeliveryRecord, consumedWriteUnits: 0 };
  }

  async transition(request: TransitionRequest): Promise<TransitionResult> {
    const { pk, from, to, expectedVersion, now } = request;
    if (!canTransition(from, to)) {
      throw new TransitionRefusedError(`transition ${from} → ${to} is not in the state table (row ${pk})`);
    }
    const current = this.items.get(pk) as (Item & DeliveryRecord) | undefined;
    const stale = (): TransitionResult => ({
      kind: 'stale',
      ...(current ? { current: copy(current) } : {}),
      consumedWriteUnits: 0,
    });
    if (!current || current.version !== expectedVersion || current.state !== from) return stale();
    if (
      request.leaseExpiredBefore !== undefined &&
      current.leaseUntil !== undefined &&
      !(current.leaseUntil < request.leaseExpiredBefore)
    )
      return stale();
    if (request.evidenceId && current.evidenceIds?.includes(request.evidenceId)) return stale();

    const entry: TransitionEntry = {
      s: to,
      at: now,
      by: request.by,
      ...(request.why ? { why: request.why } : {}),
      ...(request.set?.providerMessageId ? { msg: request.set.providerMessageId } : {}),
      ...(request.set?.attempts !== undefined ? { n: request.set.attempts } : {}),
      ...(request.set?.transport ? { p: request.set.transport } : {}),
    };
    const next: Record<string, unknown> = {
      ...current,
      state: to,
      version: current.version + 1,
      history: [...current.history, entry],
      updatedAt: now,
    };
    for (const [key, value] of Object.entries(request.set ?? {})) {
      if (value !== undefined) next[key] = value;
    }
    if (ATTENTION_STATES.includes(to)) {
      next.attn = attentionPartitionOf(to, pk, this.attentionShards);
      next.attnAt = to === 'retry_wait' && request.set?.nextAttemptAt ? request.set.nextAttemptAt : now;
    } else if (ATTENTION_STATES.includes(from)) {
      delete next.attn;
      delete next.attnAt;
    }
    if (!LEASED_STATES.includes(to)) {
      for (const key of ['leaseOwner', 'leaseUntil'] as const) {
        if (request.set?.[key] === undefined) delete next[key];
      }
    }
    if (dropsDueTime(request)) delete next.nextAttemptAt;
    if (request.evidenceId) next.evidenceIds = [...(current.evidenceIds ?? []), request.evidenceId];
    const stored = copy(next) as Item;
    this.items.set(pk, stored);
    return { kind: 'ok', record: copy(stored) as unknown as DeliveryRecord, consumedWriteUnits: 0 };
  }

  async get(pk: string, _consistent = true): Promise<DeliveryRecord | undefined> {
    const item = this.items.get(pk);
    return item ? (copy(item) as unknown as DeliveryRecord) : undefined;
  }

  /**
   * One index partition, oldest first, `limit` at a time after `startKey`. Like a DynamoDB Query with a
   * Limit, a full page carries a last key even when nothing follows it.
   */
  private partitionQuery =
    (filter: (item: Item) => boolean = () => true): PartitionQuery =>
    async (partition, startKey, limit) => {
      const rows = [...this.items.values()]
        .filter((item) => item[LEDGER_TABLE.attentionIndex.partitionKey] === partition && filter(item))
        .sort(byIndexOrder);
      const after = startKey ? rows.filter((item) => byIndexOrder(item, startKey as Item) > 0) : rows;
      const items = after.slice(0, limit).map(copy);
      const last = items.length === limit ? items[items.length - 1] : undefined;
      return {
        items,
        ...(last
          ? {
              lastKey: {
                [LEDGER_TABLE.partitionKey]: last.pk,
                [LEDGER_TABLE.attentionIndex.partitionKey]: last[LEDGER_TABLE.attentionIndex.partitionKey],
                [LEDGER_TABLE.attentionIndex.sortKey]: last[LEDGER_TABLE.attentionIndex.sortKey],
              },
            }
          : {}),
        readUnits: 0,
      };
    };

  async listAttention(
    state: DeliveryState,
    options: { limit?: number; cursor?: string } = {},
  ): Promise<AttentionPage> {
    const page = await readMergedPage(
      attentionPartitions(state, this.attentionShards),
      this.partitionQuery(),
      options.limit ?? 25,
      options.cursor,
    );
    return {
      items: page.items as unknown as DeliveryRecord[],
      ...(page.cursor ? { cursor: page.cursor } : {}),
      consumedReadUnits: 0,
    };
  }

  async findWaitingByIdempotencyKey(
    idempotencyKey: string,
    states: readonly DeliveryState[] = ['unknown', 'quarantined'],
  ): Promise<{ record?: DeliveryRecord; consumedReadUnits: number }> {
    for (const state of states) {
      const partitions = new Set(attentionPartitions(state, this.attentionShards));
      for (const item of this.items.values()) {
        const attn = item[LEDGER_TABLE.attentionIndex.partitionKey];
        if (typeof attn === 'string' && partitions.has(attn) && item.idempotencyKey === idempotencyKey)
          return { record: copy(item) as unknown as DeliveryRecord, consumedReadUnits: 0 };
      }
    }
    return { consumedReadUnits: 0 };
  }

  /** Operator queries (lib/ledger/operatorQueries.ts) over the same items. */
  async findByEvent(eventId: string): Promise<DeliveryRecord[]> {
    return [...this.items.values()]
      .filter((item) => item.eventId === eventId)
      .map((item) => copy(item) as unknown as DeliveryRecord)
      .sort((a, b) => a.createdAt - b.createdAt || a.pk.localeCompare(b.pk));
  }

  async summaries(_cursor?: string): Promise<{ items: ItemSummary[]; cursor?: string }> {
    return {
      items: [...this.items.values()].map(
        ({ pk, state, kind, createdAt, attnAt, failures, openUntil, reason }) => ({
          ...(pk !== undefined ? { pk } : {}),
          ...(state !== undefined ? { state } : {}),
          ...(failures !== undefined ? { failures } : {}),
          ...(openUntil !== undefined ? { openUntil } : {}),
          ...(reason !== undefined ? { reason } : {}),
          ...(kind !== undefined ? { kind } : {}),
          ...(createdAt !== undefined ? { createdAt } : {}),
          ...(attnAt !== undefined ? { attnAt } : {}),
        }),
      ) as ItemSummary[],
    };
  }

  async rows(): Promise<DeliveryRecord[]> {
    return [...this.items.values()]
      .filter((item) => item.state !== undefined)
      .map((item) => copy(item) as unknown as DeliveryRecord);
  }

  async park(seal: Omit<SealedIntent, 'pk' | 'kind' | 'resumes'>): Promise<void> {
    const pk = `${SEAL_PREFIX}${seal.logicalKey}`;
    if (this.items.has(pk)) {
      await this.rearm(seal.logicalKey, seal.dueAt, seal.reason);
      return;
    }
    this.items.set(
      pk,
      copy({
        ...seal,
        pk,
        kind: 'seal',
        resumes: 0,
        attn: attentionPartitionOf(PARKED, pk, this.attentionShards),
        attnAt: seal.dueAt,
      }),
    );
  }

  async rearm(logicalKey: string, dueAt: number, reason: string, resumed = false): Promise<boolean> {
    const pk = `${SEAL_PREFIX}${logicalKey}`;
    const item = this.items.get(pk);
    if (!item) return false;
    this.items.set(pk, {
      ...item,
      attn: attentionPartitionOf(PARKED, pk, this.attentionShards),
      attnAt: dueAt,
      dueAt,
      reason,
      ...(resumed ? { resumes: Number(item.resumes) + 1 } : {}),
    });
    return true;
  }

  async getSeal(logicalKey: string): Promise<SealedIntent | undefined> {
    const item = this.items.get(`${SEAL_PREFIX}${logicalKey}`);
    return item ? sealOf(copy(item)) : undefined;
  }

  async release(logicalKey: string): Promise<void> {
    this.items.delete(`${SEAL_PREFIX}${logicalKey}`);
  }

  async listDue(
    now: number,
    options: { limit?: number; cursor?: string } = {},
  ): Promise<{ items: SealedIntent[]; cursor?: string }> {
    const page = await readMergedPage(
      attentionPartitions(PARKED, this.attentionShards),
      this.partitionQuery((item) => sortValue(item) <= now),
      options.limit ?? 25,
      options.cursor,
    );
    return { items: page.items.map(sealOf), ...(page.cursor ? { cursor: page.cursor } : {}) };
  }

  async openFlow(logicalKey: string, order: Channel[]): Promise<FallbackFlow> {
    const pk = `${FLOW_PREFIX}${logicalKey}`;
    const existing = this.items.get(pk);
    if (existing) return flowOf(existing);
    const flow: FallbackFlow = { pk, order: [...order], activeIndex: 0, version: 1 };
    this.items.set(pk, copy({ ...flow, kind: 'flow' }));
    return flowOf(flow as unknown as Item);
  }

  async advanceFlow(
    logicalKey: string,
    fromIndex: number,
    expectedVersion: number,
  ): Promise<FallbackFlow | undefined> {
    const pk = `${FLOW_PREFIX}${logicalKey}`;
    const item = this.items.get(pk);
    if (!item) return undefined;
    const flow = flowOf(item);
    if (
      flow.activeIndex !== fromIndex ||
      flow.version !== expectedVersion ||
      flow.order.length <= fromIndex + 1
    )
      return undefined;
    const next = { ...item, activeIndex: fromIndex + 1, version: flow.version + 1 };
    this.items.set(pk, next);
    return flowOf(next);
  }

  async getFlow(logicalKey: string): Promise<FallbackFlow | undefined> {
    const item = this.items.get(`${FLOW_PREFIX}${logicalKey}`);
    return item ? flowOf(item) : undefined;
  }
  async commitCancel(
    tenant: string,
    eventId: string,
    order: CancelOrder,
    ttl: number,
  ): Promise<CancelCommitResult> {
    const pk = cancelMarkerKey(tenant, eventId);
    const marker = this.items.get(pk) as (Item & { orders: CancelOrder[] }) | undefined;
    const first = marker?.orders.find((o) => o.id === order.id);
    if (first) return { kind: 'exists', order: copy(first) };
    this.items.set(pk, {
      pk,
      kind: 'cancel',
      tenant,
      cancelOf: eventId,
      ttl: (marker?.ttl as number | undefined) ?? ttl,
      orders: [...(marker?.orders ?? []), copy(order)],
    });
    return { kind: 'committed', order: copy(order) };
  }

  async getCancelMarker(tenant: string, eventId: string): Promise<CancelMarker | undefined> {
    const item = this.items.get(cancelMarkerKey(tenant, eventId));
    if (!item) return undefined;
    const { cancelOf, ...marker } = copy(item);
    return { ...marker, eventId: cancelOf } as unknown as CancelMarker;
  }

  async annotate(request: AnnotationRequest): Promise<boolean> {
    const current = this.items.get(request.pk) as (Item & DeliveryRecord) | undefined;
    if (!current || current.version !== request.expectedVersion || current.state !== request.state)
      return false;
    const entry: TransitionEntry = { s: request.state, at: request.now, by: request.by, why: request.why };
    this.items.set(request.pk, {
      ...current,
      version: current.version + 1,
      history: [...current.history, entry],
      updatedAt: request.now,
    });
    return true;
  }
}

const flowOf = (item: Item): FallbackFlow => {
  const { pk, order, activeIndex, version } = copy(item) as unknown as FallbackFlow;
  return { pk, order, activeIndex, version };
};

/** The seal as the port describes it (without the index attributes). */
const sealOf = (item: Record<string, unknown>): SealedIntent => {
  const { attn: _a, attnAt: _t, ...seal } = item;
  return seal as unknown as SealedIntent;
};
