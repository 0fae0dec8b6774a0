import { parentPort, workerData } from 'node:worker_threads';
import { dynamoDocumentClient } from '../../lib/aws/clients.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../lib/ledger/port.js';

/**
 * One racing worker in its own thread with its own DynamoDB client (its own connection pool): it tries
 * to claim every key, in its own shuffled order, and reports what it won and whose row it was shown.
 */
interface RaceInput {
  endpoint: string;
  table: string;
  workerId: string;
  keys: string[];
  seed: number;
}

const { endpoint, table, workerId, keys, seed } = workerData as RaceInput;
const ledger = new DynamoLedger(dynamoDocumentClient({ region: 'us-east-1', endpoint }), table);

let state = seed;
const random = () => {
  state = (state * 1103515245 + 12345) % 2 ** 31;
  return state / 2 ** 31;
};
const order = [...keys].sort(() => random() - 0.5);

const row = (pk: string, now: number): DeliveryRecord => ({
  pk,
  kind: 'delivery',
  idempotencyKey: pk,
  state: 'claimed',
  version: 1,
  tenant: 't',
  purpose: 'receipt',
  eventId: pk,
  recipientRef: 'r',
  channel: 'email',
  logicalKey: pk,
  contentHash: 'h1:x',
  policyVersion: 'receipt/1',
  templateId: 'receipt',
  templateRevision: 'v4',
  templateOwner: 'application',
  attempts: 0,
  createdAt: now,
  updatedAt: now,
  leaseOwner: workerId,
  leaseUntil: now + 60_000,
  history: [{ s: 'claimed', at: now, by: workerId }],
});

const won: string[] = [];
const conflicts: Array<{ key: string; shownOwner: string }> = [];
// Two requests in flight per worker (32 in all): real contention without drowning DynamoDB Local.
const lanes = Array.from({ length: 2 }, async (_, lane) => {
  for (let i = lane; i < order.length; i += 2) {
    const key = order[i]!;
    const result = await ledger.claim(row(key, Date.now()));
    if (result.kind === 'claimed') won.push(key);
    else conflicts.push({ key, shownOwner: result.existing.history[0]!.by });
  }
});
await Promise.all(lanes);
parentPort!.postMessage({ workerId, won, conflicts });
