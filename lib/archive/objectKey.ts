import { ARCHIVE_PARTITION, ARCHIVE_PREFIX } from './schema.js';

/** `YYYY-MM-DD` (UTC) of an epoch-ms time: the partition a transition belongs to. */
export const partitionDate = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 10);

/**
 * The object key of one stream record's transitions on one date.
 *
 * Keyed by the stream sequence number, never by the batch: Lambda's bisect-on-error re-groups records
 * on retry, so a key per batch range would write the same transition under two keys. With one object
 * per stream record, ANY retry grouping writes the same keys again and overwrites (in the Object Lock
 * bucket an overwrite becomes a new version of the same key; Athena reads only the current one).
 * Trade-off: many small objects (one per transition, ~1 KB); acceptable at notification volumes, and a
 * later compaction job can merge a closed day into one file without changing the table.
 *
 * Sequence numbers are decimal strings of varying length; left-padding to 40 digits makes the keys sort
 * in stream order.
 */
export const archiveObjectKey = (date: string, sequenceNumber: string): string => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`not a partition date: ${date}`);
  if (!/^\d{1,40}$/.test(sequenceNumber)) throw new Error(`not a stream sequence number: ${sequenceNumber}`);
  return `${ARCHIVE_PREFIX}${ARCHIVE_PARTITION.name}=${date}/${sequenceNumber.padStart(40, '0')}.jsonl.gz`;
};
