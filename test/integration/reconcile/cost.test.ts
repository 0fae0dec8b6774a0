import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../../lib/domain/keys.js';
import { ATTENTION_SHARDS, attentionPartitionOf } from '../../../lib/ledger/attentionIndex.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { restTransports } from '../../support/dispatchHarness.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';
import { ManualClock } from '../../support/manualClock.js';
import { countingLookups, meterDynamo, reconcilerFor } from './support.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator (lookups) on 127.0.0.1.
let sim: RunningProviderSimulator;
const clock = new ManualClock(Date.now());
const DAY = 86_400_000;

const row = (i: number, state: 'accepted' | 'unknown', now: number): DeliveryRecord => {
  const pk = `acme:receipt:ord_${state}_${i}:player-${i}:email:rev=v4`;
  const sentAt = state === 'unknown' ? now - 2 * DAY : now - 60_000;
  return {
    pk,
    kind: 'delivery',
    idempotencyKey: hashKey(pk),
    state,
    version: 4,
    tenant: 'acme',
    purpose: 'receipt',
    eventId: `ord_${state}_${i}`,
    recipientRef: `player-${i}`,
    channel: 'email',
    logicalKey: pk.replace(':email', ''),
    contentHash: `h1:${'c'.repeat(64)}`,
    policyVersion: 'receipt/1',
    templateId: 'receipt',
    templateRevision: 'v4',
    templateOwner: 'application',
    transport: 'rest',
    attempts: 1,
    createdAt: sentAt,
    updatedAt: sentAt + 1000,
    history: [
      { s: 'claimed', at: sentAt, by: 'dispatch:seed', why: 'intent_received' },
      { s: 'dispatching', at: sentAt + 10, by: 'dispatch:seed', why: 'gates_passed', n: 1 },
      state === 'unknown'
        ? { s: 'unknown', at: sentAt + 1000, by: 'dispatch:seed', why: 'ambiguous:timeout', n: 1 }
        : {
            s: 'accepted',
            at: sentAt + 1000,
            by: 'dispatch:seed',
            why: 'provider_accepted',
            msg: `m${i}`,
            n: 1,
          },
    ],
    ...(state === 'unknown'
      ? { attn: attentionPartitionOf('unknown', pk, ATTENTION_SHARDS.default), attnAt: sentAt + 1000 }
      : { providerMessageId: `m${i}` }),
  };
};

/** A fresh table with `background` happy-path rows and the same 20 unknown rows, written with BatchWrite. */
const seededTable = async (background: number) => {
  const { raw, doc } = localDynamo();
  const table = await createLedgerTable(raw, 'reconcile-cost');
  const now = clock.now();
  const items = [
    ...Array.from({ length: background }, (_, i) => row(i, 'accepted', now)),
    ...Array.from({ length: 20 }, (_, i) => row(i, 'unknown', now)),
  ];
  for (let i = 0; i < items.length; i += 25) {
    let requests: unknown[] = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    while (requests.length) {
      const out = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests as never } }));
      requests = out.UnprocessedItems?.[table] ?? [];
    }
  }
  return table;
};

/** One full reconcile run over a table, measured at the reconciler's own DynamoDB client. */
const measuredRun = async (table: string) => {
  const { doc } = localDynamo();
  const meter = meterDynamo(doc);
  const email = countingLookups(restTransports(sim).email);
  const run = await reconcilerFor(
    new DynamoLedger(doc, table),
    { email, sms: restTransports(sim).sms },
    clock,
  ).runAll();
  return { run, meter, lookups: email.lookups };
};

beforeAll(async () => {
  sim = await startProviderSimulator();
});
afterAll(async () => {
  await sim.stop();
});

describe('reconciler cost', () => {
  it('a table ten times larger with the same 20 unknown rows costs the same reads', async () => {
    // Prepare
    const small = await seededTable(100);
    const large = await seededTable(1_000);
    // Act
    const a = await measuredRun(small);
    const b = await measuredRun(large);
    // Assess
    for (const m of [a, b]) {
      expect(m.run).toMatchObject({ processed: 20, quarantined: 20, hasMore: false });
      expect(m.lookups).toBe(20);
    }
    expect(Object.fromEntries(b.meter.commands)).toEqual(Object.fromEntries(a.meter.commands));
    expect(a.meter.commands.get('ScanCommand')).toBeUndefined();
    expect(b.meter.readUnits).toBe(a.meter.readUnits);
    // The figure for the report: Query calls and read units per run, at 100 and at 1,000 background rows.
    console.info(
      `reconcile cost: 100 bg rows → ${a.meter.commands.get('QueryCommand')} queries, ${a.meter.readUnits} RCU; ` +
        `1000 bg rows → ${b.meter.commands.get('QueryCommand')} queries, ${b.meter.readUnits} RCU; ` +
        `all operations ${JSON.stringify(Object.fromEntries(a.meter.commands))} / ${JSON.stringify(Object.fromEntries(b.meter.commands))}`,
    );
  });
});
