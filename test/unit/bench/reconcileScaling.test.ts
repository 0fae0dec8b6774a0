import { describe, expect, it } from 'vitest';
import { rowsFor } from '../../../bench/reconcileScaling.js';
import {
  ATTENTION_SHARDS,
  attentionPartitions,
  type PartitionQuery,
  readMergedPage,
} from '../../../lib/ledger/attentionIndex.js';

/**
 * Issue 27 item 4 (`reconcile_reads_flat` in `npm run bench`, measured there on DynamoDB Local): the
 * pass over the same 100 unknown rows must read the same at 1,000 and at 10,000 table rows. Counted
 * here without a server: the attention index is the rows' `attn`/`attnAt`, each Query billed as
 * DynamoDB bills it (its items' bytes rounded up to 4 KB, half a unit each, at least half a unit).
 */
const PAGE = 25; // the Reconciler's page size

type Row = Record<string, unknown> & { pk: string };

/** One pass as Reconciler.runAll makes it: merged pages of 25 until the cursor runs out. */
const readsOf = async (tableRows: number): Promise<{ queries: number; readUnits: number; rows: number }> => {
  const index = new Map<string, Row[]>();
  for (const row of rowsFor(tableRows, 100)) {
    if (!row.attn) continue;
    index.set(row.attn, [...(index.get(row.attn) ?? []), row as unknown as Row]);
  }
  for (const partition of index.values()) partition.sort((a, b) => Number(a.attnAt) - Number(b.attnAt));
  let queries = 0;
  const query: PartitionQuery = async (partition, startKey, limit) => {
    queries += 1;
    const all = index.get(partition) ?? [];
    const from = startKey ? all.findIndex((r) => r.pk === startKey.pk) + 1 : 0;
    const items = all.slice(from, from + limit);
    const bytes = items.reduce((sum, item) => sum + JSON.stringify(item).length, 0);
    const last = items.at(-1);
    return {
      items,
      ...(last && from + limit < all.length ? { lastKey: { pk: last.pk, attnAt: last.attnAt } } : {}),
      readUnits: Math.max(1, Math.ceil(bytes / 4096)) * 0.5,
    };
  };
  let readUnits = 0;
  let rows = 0;
  let cursor: string | undefined;
  do {
    const page = await readMergedPage(
      attentionPartitions('unknown', ATTENTION_SHARDS.default),
      query,
      PAGE,
      cursor,
    );
    readUnits += page.readUnits;
    rows += page.items.length;
    cursor = page.cursor;
  } while (cursor);
  return { queries, readUnits, rows };
};

describe('the reconcile scaling benchmark', () => {
  it('reads the same Query pages for the same unknown rows at 1,000 and 10,000 table rows', async () => {
    const small = await readsOf(1_000);
    const large = await readsOf(10_000);
    expect(small.rows).toBe(100);
    expect(large.rows).toBe(100);
    expect(large.queries).toBe(small.queries);
    expect(large.readUnits / small.readUnits).toBe(1);
  });
});
