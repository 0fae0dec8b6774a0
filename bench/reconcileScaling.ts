import { performance } from 'node:perf_hooks';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { hashKey } from '../lib/domain/keys.js';
import { ATTENTION_SHARDS, attentionPartitionOf } from '../lib/ledger/attentionIndex.js';
import { DynamoLedger } from '../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../lib/ledger/port.js';
import { RestTransport } from '../lib/transports/RestTransport.js';
import { runReconcilePass } from './reconcilePass.js';
import type { ReconcileRow } from './results.js';
import {
  type BenchDynamo,
  claimShapedRecord,
  createLedgerTables,
  dropTables,
  type SimulatorProcess,
} from './stack.js';
import { median } from './stats.js';
import { runPool } from './throughput.js';

const BATCH = 25;

/**
 * Row shapes as the dispatcher leaves them: background rows are accepted deliveries (no `attn`, so they
 * are not in the sparse index); unknown rows were dispatched through `rest` and lost their answer.
 *
 * The unknown rows are the same rows (key, shard, age) at every table size, spread evenly through the
 * table; only the background grows. A pass reads Query pages of the attention index, and DynamoDB bills
 * each Query by its own items, so what a pass reads depends on how its rows fall over the shards: with
 * keys numbered by table position (`#r0, #r10, …` in 1,000 rows, `#r0, #r100, …` in 10,000), the two
 * tables held 100 different rows whose shard counts differed, and the merged pages made 29 Queries
 * against 30 (14 against 14.5 read units, the "1.04"). The index was never read more for a bigger table.
 */
export const rowsFor = (tableRows: number, unknownRows: number): DeliveryRecord[] => {
  const base = claimShapedRecord();
  const now = Date.now();
  const { leaseOwner: _o, leaseUntil: _u, ...settled } = base;
  const history = (last: DeliveryRecord['history'][number]) => [
    base.history[0]!,
    { s: 'dispatching' as const, at: now, by: 'dispatch:bench', why: 'gates_passed', n: 1 },
    last,
  ];
  const rows: DeliveryRecord[] = [];
  const every = Math.max(1, Math.floor(tableRows / unknownRows));
  let unknown = 0;
  for (let i = 0; i < tableRows; i++) {
    if (unknown < unknownRows && i % every === 0) {
      const pk = `${base.pk}#u${unknown}`;
      rows.push({
        ...settled,
        pk,
        idempotencyKey: hashKey(pk),
        state: 'unknown',
        version: 3,
        attempts: 1,
        transport: 'rest',
        attn: attentionPartitionOf('unknown', pk, ATTENTION_SHARDS.default),
        attnAt: now + unknown,
        history: history({ s: 'unknown', at: now, by: 'dispatch:bench', why: 'ambiguous:bench' }),
      });
      unknown += 1;
    } else {
      const pk = `${base.pk}#r${i}`;
      rows.push({
        ...settled,
        pk,
        idempotencyKey: hashKey(pk),
        state: 'accepted',
        version: 3,
        attempts: 1,
        transport: 'rest',
        providerMessageId: `sim_bench_${i}`,
        ttl: Math.floor(now / 1000) + 86_400,
        history: history({ s: 'accepted', at: now, by: 'dispatch:bench', why: 'provider_accepted', n: 1 }),
      });
    }
  }
  return rows;
};

const load = async (
  dynamo: BenchDynamo,
  table: string,
  rows: DeliveryRecord[],
  progress: (line: string) => void,
): Promise<void> => {
  const batches = Math.ceil(rows.length / BATCH);
  let written = 0;
  let reported = 0;
  await runPool(batches, 4, async (b) => {
    let pending = rows.slice(b * BATCH, (b + 1) * BATCH).map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 10) throw new Error(`BatchWriteItem left ${pending.length} items unprocessed`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 50 * attempt));
      const out = await dynamo.doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
    }
    written += BATCH;
    if (written - reported >= 2000) {
      reported = written;
      progress(`reconcile: loaded ${Math.min(written, rows.length)}/${rows.length} rows into ${table}`);
    }
  });
};

/**
 * One reconcile pass over 100 unknown rows in tables of different sizes. The attention index is sparse,
 * so the pass must read the same units whatever the table holds. Three passes per table (they write
 * nothing: every row is left for the parked intent's replay), median time reported.
 */
export const measureReconcileScaling = async (
  dynamo: BenchDynamo,
  sim: SimulatorProcess,
  sizes: readonly number[],
  unknownRows: number,
  progress: (line: string) => void,
): Promise<{ rows: ReconcileRow[]; readsEqual: boolean }> => {
  const transports = {
    email: new RestTransport({ baseUrl: sim.url, channel: 'email' }),
    sms: new RestTransport({ baseUrl: sim.url, channel: 'sms' }),
  };
  const results: ReconcileRow[] = [];
  for (const size of sizes) {
    const { ledgerTable } = await createLedgerTables(dynamo.raw, `reconcile-${size}`, { stream: false });
    const started = performance.now();
    await load(dynamo, ledgerTable, rowsFor(size, unknownRows), progress);
    progress(`reconcile: ${size} rows loaded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const ledger = new DynamoLedger(dynamo.doc, ledgerTable);
    const times: number[] = [];
    const reads: number[] = [];
    let last: Awaited<ReturnType<typeof runReconcilePass>> | undefined;
    for (let pass = 0; pass < 3; pass++) {
      const t0 = performance.now();
      const measured = await dynamo.meter.measure(() => runReconcilePass(ledger, transports));
      times.push(performance.now() - t0);
      reads.push(measured.totals.readUnits);
      last = measured.value;
      if (measured.value.processed !== unknownRows)
        throw new Error(`reconcile pass saw ${measured.value.processed} rows, expected ${unknownRows}`);
      if (measured.totals.writeRequests !== 0)
        throw new Error(
          `reconcile pass wrote ${measured.totals.writeRequests} times; rows should be left alone`,
        );
    }
    if (new Set(reads).size !== 1)
      throw new Error(`reconcile passes read different units: ${reads.join(', ')}`);
    results.push({
      tableRows: size,
      unknownRows,
      pages: last!.pages,
      readUnits: reads[0]!,
      ms: median(times),
      via: last!.via,
    });
    progress(`reconcile: ${size} rows → ${reads[0]} read units, ${median(times).toFixed(1)} ms per pass`);
    await dropTables(dynamo.raw);
  }
  return { rows: results, readsEqual: new Set(results.map((r) => r.readUnits)).size === 1 };
};
