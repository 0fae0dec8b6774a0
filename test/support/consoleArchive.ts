import { gzipSync } from 'node:zlib';
import { toJsonLine } from '../../lib/archive/archiver.js';
import { batchObjectKey, partitionDate } from '../../lib/archive/objectKey.js';
import type { ArchiveStore } from '../../lib/archive/store.js';
import { transitionsOf } from '../../lib/archive/transitions.js';
import type { DeliveryRecord } from '../../lib/ledger/port.js';
import { streamRecord } from '../fixtures/archive/streamRecords.js';

/**
 * Archives rows as the archiver would: each row's stream INSERT (its whole history and delivery facts)
 * through the archiver's own derivation (transitionsOf) and line format, one object per row and day.
 * Returns the keys written.
 */
export const archiveRows = async (
  store: ArchiveStore,
  rows: readonly DeliveryRecord[],
): Promise<string[]> => {
  const keys: string[] = [];
  for (const row of rows) {
    const record = streamRecord({ eventName: 'INSERT', newImage: { ...row } });
    const lines = transitionsOf(record);
    const byDate = new Map<string, typeof lines>();
    for (const line of lines) {
      const date = partitionDate(Number(line.transition_at_ms));
      byDate.set(date, [...(byDate.get(date) ?? []), line]);
    }
    const sequence = record.dynamodb!.SequenceNumber!;
    for (const [date, group] of byDate) {
      const key = batchObjectKey({ tenant: row.tenant, date }, sequence, sequence);
      await store.put(key, gzipSync(`${group.map(toJsonLine).join('\n')}\n`));
      keys.push(key);
    }
  }
  return keys;
};
