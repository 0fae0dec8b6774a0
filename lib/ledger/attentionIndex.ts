import { createHash } from 'node:crypto';
import { LEDGER_TABLE } from './tableDefinition.js';

/**
 * The attention index's partition key is sharded: a row in state S carries `attn = "S#k"`, with
 * k = (first 32 bits of sha256(pk)) mod N. A provider outage that parks 10,000 rows in `unknown` then
 * spreads them over N GSI partitions instead of making one hot one. N is configuration
 * (SENDPROOF_ATTENTION_SHARDS, CDK `attentionShards`); it may grow, never shrink: a row keeps the shard
 * it was written to until it leaves the state, and readers read shards 0..N-1 (and the unsharded
 * partition `S` that rows written before sharding carry), so growing N strands nothing.
 */
export const ATTENTION_SHARDS = { default: 4, max: 64 } as const;

export const attentionShardOf = (pk: string, shards: number): number =>
  createHash('sha256').update(pk, 'utf8').digest().readUInt32BE(0) % shards;

export const attentionPartitionOf = (state: string, pk: string, shards: number): string =>
  `${state}#${attentionShardOf(pk, shards)}`;

/** Every partition a reader must look at for one state: the unsharded legacy one, then each shard. */
export const attentionPartitions = (state: string, shards: number): string[] => [
  state,
  ...Array.from({ length: shards }, (_, k) => `${state}#${k}`),
];

export const validateShards = (shards: number): number => {
  if (!Number.isInteger(shards) || shards < 1 || shards > ATTENTION_SHARDS.max)
    throw new RangeError(
      `attention shards must be an integer between 1 and ${ATTENTION_SHARDS.max}, got ${shards}`,
    );
  return shards;
};

type Key = Record<string, unknown>;
type Row = Record<string, unknown> & { pk: string };

/** One Query of one index partition: up to `limit` items after `startKey`, oldest first. */
export type PartitionQuery = (
  partition: string,
  startKey: Key | undefined,
  limit: number,
) => Promise<{ items: Row[]; lastKey?: Key; readUnits: number }>;

/**
 * Where a merged read stopped, per partition: `null` not started, `0` finished, or the index key of the
 * last row returned from it (an ExclusiveStartKey: table key + index keys).
 */
interface MergedCursor {
  v: 1;
  p: string[];
  at: Array<Key | null | 0>;
}

const keyOf = (row: Row): Key => ({
  [LEDGER_TABLE.partitionKey]: row.pk,
  [LEDGER_TABLE.attentionIndex.partitionKey]: row[LEDGER_TABLE.attentionIndex.partitionKey],
  [LEDGER_TABLE.attentionIndex.sortKey]: row[LEDGER_TABLE.attentionIndex.sortKey],
});

const sortValue = (row: Row): number => Number(row[LEDGER_TABLE.attentionIndex.sortKey] ?? 0);

export const encodeMergedCursor = (cursor: MergedCursor): string =>
  Buffer.from(JSON.stringify(cursor)).toString('base64url');

const decodeMergedCursor = (cursor: string): MergedCursor => {
  let parsed: Partial<MergedCursor>;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<MergedCursor>;
  } catch {
    throw new RangeError('attention cursor is not one this ledger wrote');
  }
  if (
    parsed.v !== 1 ||
    !Array.isArray(parsed.p) ||
    !Array.isArray(parsed.at) ||
    parsed.p.length !== parsed.at.length
  )
    throw new RangeError('attention cursor is not one this ledger wrote');
  return parsed as MergedCursor;
};

/**
 * One page of an attention state across all its partitions, merged oldest first (by `attnAt`), exactly
 * as one unsharded Query would have returned it, with a composite cursor.
 *
 * Why a merge and not shard by shard: the reconciler's first page must hold the oldest row (its
 * OldestUnknownAge gauge reads it), and a shard-by-shard walk would starve shard N-1 behind shard 0
 * while a page budget is spent. Cost: each partition is read in chunks of ceil(limit / partitions), and
 * the rows read but not returned (at most one chunk per partition) are read again by the next page, so
 * a page reads at most `limit + partitions × chunk` items in at least one Query per partition that is not
 * finished.
 */
export const readMergedPage = async (
  partitions: readonly string[],
  query: PartitionQuery,
  limit: number,
  cursor: string | undefined,
): Promise<{ items: Row[]; cursor?: string; readUnits: number }> => {
  const previous = cursor ? decodeMergedCursor(cursor) : undefined;
  // A cursor from before N grew names fewer partitions: the new ones start from the beginning.
  const names = [...new Set([...(previous?.p ?? []), ...partitions])];
  const start = names.map((name) => {
    const i = previous?.p.indexOf(name) ?? -1;
    return i >= 0 ? (previous!.at[i] as Key | null | 0) : null;
  });
  const chunk = Math.max(1, Math.ceil(limit / names.length));
  const state = names.map((name, i) => ({
    name,
    buffer: [] as Row[],
    next: (start[i] || undefined) as Key | undefined,
    exhausted: start[i] === 0,
    last: start[i] as Key | null | 0,
  }));
  let readUnits = 0;
  const fill = async (s: (typeof state)[number]) => {
    const out = await query(s.name, s.next, chunk);
    readUnits += out.readUnits;
    s.buffer.push(...out.items);
    s.next = out.lastKey;
    if (!out.lastKey) s.exhausted = true;
  };
  const items: Row[] = [];
  while (items.length < limit) {
    // Every partition that may hold the next-oldest row must show its head before one is picked.
    const empty = state.filter((s) => s.buffer.length === 0 && !s.exhausted);
    if (empty.length > 0) {
      await Promise.all(empty.map(fill));
      continue;
    }
    let pick: (typeof state)[number] | undefined;
    for (const s of state) {
      const head = s.buffer[0];
      if (!head) continue;
      const best = pick?.buffer[0];
      if (
        !best ||
        sortValue(head) < sortValue(best) ||
        (sortValue(head) === sortValue(best) && head.pk < best.pk)
      )
        pick = s;
    }
    if (!pick) break;
    const row = pick.buffer.shift()!;
    items.push(row);
    pick.last = keyOf(row);
  }
  const at = state.map((s) => (s.buffer.length === 0 && s.exhausted ? 0 : s.last));
  const more = at.some((position) => position !== 0);
  return {
    items,
    ...(more ? { cursor: encodeMergedCursor({ v: 1, p: names, at }) } : {}),
    readUnits,
  };
};
