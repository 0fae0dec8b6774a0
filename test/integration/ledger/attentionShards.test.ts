import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildClaimRecord } from '../../../lib/dispatch/claimRecord.js';
import { contentHash } from '../../../lib/domain/content.js';
import { parseIntent } from '../../../lib/domain/intent.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { attentionPartitions, attentionShardOf } from '../../../lib/ledger/attentionIndex.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { LEDGER_TABLE } from '../../../lib/ledger/tableDefinition.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';
import { resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

const SHARDS = 4;
const ROWS = 40;
const clock = new ManualClock();
const purposes = new PurposeRegistry();
const { raw, doc } = localDynamo();
let table: string;
let ledger: DynamoLedger;
/** The rows in the order they entered `unknown` (oldest first). */
const parked: DeliveryRecord[] = [];

let counter = 0;
const claimRow = (): DeliveryRecord => {
  counter += 1;
  const parsed = parseIntent(resetIntent({ eventId: `shard_${counter}` }, clock.now()), { purposes, clock });
  if (!parsed.ok) throw parsed.error;
  return buildClaimRecord({
    valid: parsed.value,
    channel: 'email',
    contentHash: contentHash({ channel: 'email', subject: 's', text: 'body' }, 'k'.repeat(32)),
    templateOwner: 'application',
    workerId: 'dispatch:w1',
    now: clock.now(),
    leaseMs: 90_000,
  });
};

/** Claim → dispatching → unknown, through the ledger's own transitions (the dispatcher's path). */
const park = async (l: DynamoLedger): Promise<DeliveryRecord> => {
  const row = claimRow();
  await l.claim(row);
  await l.transition({
    pk: row.pk,
    from: 'claimed',
    to: 'dispatching',
    expectedVersion: 1,
    by: 'w',
    now: clock.now(),
  });
  clock.advance(1_000);
  const out = await l.transition({
    pk: row.pk,
    from: 'dispatching',
    to: 'unknown',
    expectedVersion: 2,
    by: 'w',
    now: clock.now(),
  });
  if (out.kind !== 'ok') throw new Error('park failed');
  return out.record;
};

const countInPartition = async (partition: string): Promise<number> => {
  let count = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new QueryCommand({
        TableName: table,
        IndexName: LEDGER_TABLE.attentionIndex.name,
        KeyConditionExpression: '#attn = :p',
        ExpressionAttributeNames: { '#attn': LEDGER_TABLE.attentionIndex.partitionKey },
        ExpressionAttributeValues: { ':p': partition },
        Select: 'COUNT',
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    count += out.Count ?? 0;
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return count;
};

const walk = async (l: DynamoLedger, limit: number, cursor?: string) => {
  const pages: DeliveryRecord[][] = [];
  let readUnits = 0;
  let next = cursor;
  do {
    const page = await l.listAttention('unknown', { limit, ...(next ? { cursor: next } : {}) });
    pages.push(page.items);
    readUnits += page.consumedReadUnits;
    next = page.cursor;
  } while (next);
  return { pages, readUnits };
};

beforeAll(async () => {
  table = await createLedgerTable(raw, 'attn-shards');
  ledger = new DynamoLedger(doc, table, { attentionShards: SHARDS });
  for (let i = 0; i < ROWS; i++) parked.push(await park(ledger));
});

describe('the sharded attention index on DynamoDB Local', () => {
  it('spreads rows of one state over N GSI partitions instead of one', async () => {
    // Act
    const [legacy, ...shards] = await Promise.all(
      attentionPartitions('unknown', SHARDS).map(countInPartition),
    );
    // Assess
    expect(legacy).toBe(0);
    expect(shards).toHaveLength(SHARDS);
    expect(shards.reduce((a, b) => a + b, 0)).toBe(ROWS);
    for (const count of shards) {
      expect(count).toBeGreaterThan(0);
      expect(count).toBeLessThanOrEqual(ROWS / 2);
    }
    for (const row of parked) expect(row.attn).toBe(`unknown#${attentionShardOf(row.pk, SHARDS)}`);
    console.info(
      `attention shards: ${ROWS} unknown rows over ${SHARDS} GSI partitions → ${shards.join(' / ')}`,
    );
  });

  it('lists every row of every shard exactly once across pages, oldest first', async () => {
    // Act
    const { pages, readUnits } = await walk(ledger, 7);
    const listed = pages.flat().map((r) => r.pk);
    // Assess
    expect(listed).toEqual(parked.map((r) => r.pk));
    expect(new Set(listed).size).toBe(ROWS);
    expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 7, 7, 5]);
    console.info(`attention paging: ${ROWS} rows in ${pages.length} pages of 7, ${readUnits} RCU`);
  });

  it('keeps its place when the shard count grows between two pages, and reads unsharded rows', async () => {
    // Prepare: one row as an unsharded index wrote it, older than all the others
    const legacy = { ...claimRow(), state: 'unknown', attn: 'unknown', attnAt: 0 };
    await doc.send(new PutCommand({ TableName: table, Item: legacy }));
    const first = await ledger.listAttention('unknown', { limit: 9 });
    // Act: the next pages are read by a deployment with twice the shards
    const grown = new DynamoLedger(doc, table, { attentionShards: SHARDS * 2 });
    const rest = await walk(grown, 9, first.cursor);
    // Assess
    expect([...first.items, ...rest.pages.flat()].map((r) => r.pk)).toEqual([
      legacy.pk,
      ...parked.map((r) => r.pk),
    ]);
  });

  it('finds a waiting row by its idempotency key in whichever shard it lives', async () => {
    // Prepare: one row per shard
    const perShard = new Map(parked.map((r) => [attentionShardOf(r.pk, SHARDS), r]));
    // Act
    const found = await Promise.all(
      [...perShard.values()].map((r) => ledger.findWaitingByIdempotencyKey(r.idempotencyKey)),
    );
    // Assess
    expect(perShard.size).toBe(SHARDS);
    expect(found.map((f) => f.record?.pk)).toEqual([...perShard.values()].map((r) => r.pk));
  });

  it('walks every shard to the end while the walker moves each listed row out of the state', async () => {
    // Prepare: the reconciler's pattern, each page's rows leave `unknown` before the next page is read
    const expected = (await walk(ledger, 100)).pages.flat().map((r) => r.pk);
    const seen: string[] = [];
    let cursor: string | undefined;
    // Act
    do {
      const page = await ledger.listAttention('unknown', { limit: 6, ...(cursor ? { cursor } : {}) });
      for (const row of page.items) {
        seen.push(row.pk);
        const moved = await ledger.transition({
          pk: row.pk,
          from: 'unknown',
          to: 'quarantined',
          expectedVersion: row.version,
          by: 'reconciler:test',
          now: clock.now(),
        });
        expect(moved.kind).toBe('ok');
      }
      cursor = page.cursor;
    } while (cursor);
    // Assess
    expect(seen).toEqual(expected);
    expect((await ledger.listAttention('unknown')).items).toEqual([]);
    expect((await walk(ledger, 100)).pages.flat()).toHaveLength(0);
  });
});
