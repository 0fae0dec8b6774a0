import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock } from '../lib/domain/clock.js';
import { hashKey } from '../lib/domain/keys.js';
import { PurposeRegistry } from '../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../lib/evidence/EvidenceRecorder.js';
import { parseSesEvent } from '../lib/evidence/events.js';
import { fixedLabelKeys } from '../lib/evidence/labelAuth.js';
import { DynamoLedger } from '../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../lib/ledger/port.js';
import { LOCAL_CONTENT_HASH_KEY } from '../lib/secrets/contentHashKey.js';
import { labelKeyOf, sealLabel } from '../lib/transports/labels.js';

/** The local stack's label secret: events carry the label the dispatcher would have sent. */
const LABEL_KEY = labelKeyOf(LOCAL_CONTENT_HASH_KEY);

/** Read units one provider event cost, with this many rows waiting in the attention index. */
export interface EvidenceReadsRow {
  waitingRows: number;
  /** A Delivery event for a happy-path (accepted) email: the common case. */
  deliveryReadUnits: number;
  /** A Send event that settles an `unknown` row. */
  settleReadUnits: number;
  /** What the previous lookup (a filtered Query over the unknown and quarantined partitions) cost. */
  indexScanReadUnits: number;
}

const BATCH = 25;

const row = (pk: string, state: 'unknown' | 'accepted', now: number, i: number): DeliveryRecord => ({
  pk,
  kind: 'delivery',
  idempotencyKey: hashKey(pk),
  state,
  version: 3,
  tenant: 'bench',
  purpose: 'password-reset',
  eventId: `evt-${i}`,
  recipientRef: `user-${i}`,
  channel: 'email',
  logicalKey: pk.replace(/:email$/, ''),
  contentHash: `h1:${'0'.repeat(64)}`,
  policyVersion: 'password-reset/1',
  templateId: 'password-reset',
  templateRevision: 'v1',
  templateOwner: 'application',
  transport: 'ses',
  attempts: 1,
  createdAt: now,
  updatedAt: now,
  ...(state === 'unknown'
    ? { attn: 'unknown', attnAt: now + i }
    : { providerMessageId: `ses-${i}`, ttl: Math.floor(now / 1000) + 86_400 }),
  history: [
    { s: 'claimed', at: now, by: 'dispatch:bench' },
    { s: 'dispatching', at: now, by: 'dispatch:bench', why: 'gates_passed', n: 1 },
    state === 'unknown'
      ? { s: 'unknown', at: now, by: 'dispatch:bench', why: 'ambiguous:timeout' }
      : { s: 'accepted', at: now, by: 'dispatch:bench', why: 'provider_accepted', msg: `ses-${i}`, n: 1 },
  ],
});

/** Writes `count` unknown rows (waiting in the attention index), numbered from `from`. */
export const seedWaitingRows = async (
  doc: DynamoDBDocumentClient,
  table: string,
  from: number,
  count: number,
): Promise<void> => {
  const now = Date.now();
  const items = Array.from({ length: count }, (_, k) =>
    row(`bench:password-reset:w${from + k}:u:email`, 'unknown', now, from + k),
  );
  const batches: DeliveryRecord[][] = [];
  for (let i = 0; i < items.length; i += BATCH) batches.push(items.slice(i, i + BATCH));
  const worker = async () => {
    for (let batch = batches.shift(); batch; batch = batches.shift()) {
      let pending: unknown[] = batch.map((Item) => ({ PutRequest: { Item } }));
      while (pending.length) {
        const out = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending as never } }));
        pending = (out.UnprocessedItems?.[table] ?? []) as unknown[];
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
};

/** What SES echoes of a message we sent: the key hash and the row label (lib/domain/keys.ts). */
const sesEvent = (row: { pk: string; key: string }, eventType: string, messageId: string) => ({
  eventType,
  mail: {
    messageId,
    tags: { 'sendproof-key': [sealLabel(LABEL_KEY, row.pk)] },
  },
});

/**
 * One measurement at the current backlog: a Delivery for an accepted email claimed through the ledger
 * (its event names the row by its row label), a Send that settles a freshly claimed `unknown` row, and
 * the old index lookup for the same key, for comparison.
 */
export const measureEvidenceReadsOnce = async (
  doc: DynamoDBDocumentClient,
  table: string,
  waitingRows: number,
  label: string,
): Promise<EvidenceReadsRow> => {
  const ledger = new DynamoLedger(doc, table);
  const recorder = new EvidenceRecorder({
    labels: fixedLabelKeys(LOCAL_CONTENT_HASH_KEY),
    ledger,
    store: new DynamoEvidenceStore(doc, table),
    purposes: new PurposeRegistry(),
    clock: systemClock,
  });
  const now = Date.now();
  const claimAndMove = async (pk: string, to: 'accepted' | 'unknown') => {
    const base = row(pk, 'accepted', now, 0);
    const { providerMessageId: _p, ttl: _t, ...rest } = base;
    const claimed: DeliveryRecord = { ...rest, state: 'claimed', version: 1, history: [base.history[0]!] };
    await ledger.claim(claimed);
    await ledger.transition({ pk, from: 'claimed', to: 'dispatching', expectedVersion: 1, by: 'bench', now });
    await ledger.transition({
      pk,
      from: 'dispatching',
      to,
      expectedVersion: 2,
      by: 'bench',
      now,
      ...(to === 'accepted' ? { set: { providerMessageId: `ses-${label}` } } : {}),
    });
    return { pk, key: claimed.idempotencyKey };
  };
  const acceptedKey = await claimAndMove(`bench:password-reset:a-${label}:u:email`, 'accepted');
  const unknownKey = await claimAndMove(`bench:password-reset:u-${label}:u:email`, 'unknown');
  const parse = (key: { pk: string; key: string }, type: string) => {
    const parsed = parseSesEvent(sesEvent(key, type, `ses-${label}`));
    if (parsed.kind !== 'evidence') throw new Error('bench event is not evidence');
    return parsed.evidence;
  };
  const delivery = await recorder.record(parse(acceptedKey, 'Delivery'));
  const settle = await recorder.record(parse(unknownKey, 'Send'));
  if (delivery.kind !== 'fact_recorded' || settle.kind !== 'recorded')
    throw new Error(`unexpected evidence results ${delivery.kind} / ${settle.kind}`);
  const legacy = await ledger.findWaitingByIdempotencyKey('f'.repeat(64));
  return {
    waitingRows,
    deliveryReadUnits: delivery.consumedReadUnits,
    settleReadUnits: settle.consumedReadUnits,
    indexScanReadUnits: legacy.consumedReadUnits,
  };
};

/** Read units per event at each backlog size, in one table that grows between measurements. */
export const measureEvidenceReads = async (
  doc: DynamoDBDocumentClient,
  table: string,
  sizes: readonly number[],
  progress: (line: string) => void = () => {},
): Promise<EvidenceReadsRow[]> => {
  const rows: EvidenceReadsRow[] = [];
  let seeded = 0;
  for (const size of [...sizes].sort((a, b) => a - b)) {
    await seedWaitingRows(doc, table, seeded, size - seeded);
    seeded = size;
    const measured = await measureEvidenceReadsOnce(doc, table, size, `n${size}`);
    progress(
      `evidence reads: ${size} waiting rows → delivery ${measured.deliveryReadUnits} RCU, settle ${measured.settleReadUnits} RCU (index scan would be ${measured.indexScanReadUnits})`,
    );
    rows.push(measured);
  }
  return rows;
};
