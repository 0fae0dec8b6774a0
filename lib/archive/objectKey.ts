import { SendproofError } from '../domain/errors.js';
import { ARCHIVE_PARTITION, ARCHIVE_PREFIX, ARCHIVE_TENANT_PARTITION } from './schema.js';

/** `YYYY-MM-DD` (UTC) of an epoch-ms time: the partition a transition belongs to. */
export const partitionDate = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 10);

const DATE = /^\d{4}-\d{2}-\d{2}$/;
// Tenant identifiers (lib/domain/intent.ts) plus the `_none` partition: nothing that can leave the prefix.
const TENANT = /^[A-Za-z0-9_][A-Za-z0-9._@+-]{0,127}$/;
const SEQUENCE = /^\d{1,40}$/;

export interface Partition {
  tenant: string;
  date: string;
}

/** `transitions/tenant=<t>/dt=<d>/`: the prefix of one partition (Hive style, as Glue and DuckDB read it). */
export const partitionPrefix = ({ tenant, date }: Partition): string => {
  if (!TENANT.test(tenant) || tenant.includes('..'))
    throw new SendproofError('permanent', 'archive_key', `not a tenant partition: ${tenant}`);
  if (!DATE.test(date)) throw new SendproofError('permanent', 'archive_key', `not a partition date: ${date}`);
  return `${ARCHIVE_PREFIX}${ARCHIVE_TENANT_PARTITION.name}=${tenant}/${ARCHIVE_PARTITION.name}=${date}/`;
};

/**
 * The object key of one stream batch's transitions in one partition: named by the first and the last
 * stream sequence number of the batch (left-padded to 40 digits, so keys sort in stream order).
 *
 * Deterministic: the same batch delivered again (a plain retry) writes the same keys, so the retry
 * overwrites (in the Object Lock bucket, a new version of the same key; Athena reads the current one).
 * A batch the event source regroups (bisect on error, a partial-batch retry from the first failed
 * record) has another first or last sequence number and writes a second object holding some of the same
 * transitions. That is the only way a transition is stored twice, and every named query counts each
 * transition once (the `unique_transitions` CTE), so the duplicate is visible but never counted.
 */
export const batchObjectKey = (partition: Partition, firstSequence: string, lastSequence: string): string => {
  for (const sequence of [firstSequence, lastSequence])
    if (!SEQUENCE.test(sequence))
      throw new SendproofError('permanent', 'archive_key', `not a stream sequence number: ${sequence}`);
  return `${partitionPrefix(partition)}${firstSequence.padStart(40, '0')}-${lastSequence.padStart(40, '0')}.jsonl.gz`;
};

/**
 * The object key of a backfill: transitions the stream archiver gave up on, rebuilt from the ledger rows'
 * own history, named by the failed batch's coordinates, so running the backfill twice rewrites one key.
 */
export const backfillObjectKey = (
  partition: Partition,
  startSequence: string,
  endSequence: string,
): string => {
  for (const sequence of [startSequence, endSequence])
    if (!SEQUENCE.test(sequence))
      throw new SendproofError('permanent', 'archive_key', `not a stream sequence number: ${sequence}`);
  return `${partitionPrefix(partition)}backfill-${startSequence.padStart(40, '0')}-${endSequence.padStart(40, '0')}.jsonl.gz`;
};

/** The partition an object key belongs to, or undefined for a key outside the archive layout. */
export const partitionOfKey = (key: string): Partition | undefined => {
  const match = /^transitions\/tenant=([^/]+)\/dt=(\d{4}-\d{2}-\d{2})\/[^/]+\.jsonl\.gz$/.exec(key);
  return match ? { tenant: match[1]!, date: match[2]! } : undefined;
};
