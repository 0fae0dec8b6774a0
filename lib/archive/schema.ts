/**
 * The archive's one schema. Every archived line is one ledger transition with exactly these columns, in
 * this order. The Glue table (Athena) and DuckDB's `read_json(..., columns=…)` are both built from this
 * list, so the two engines read the same names with the same types.
 *
 * Nothing here may ever hold a secret, a rendered body or a raw address: the ledger row does not carry
 * them, and the archiver copies only these fields from a stream image (an allow-list, never a deny-list).
 */
export type ArchiveColumnType = 'string' | 'bigint' | 'int';

export interface ArchiveColumn {
  name: string;
  /** Glue/Athena type; DuckDB's type is derived from it by `duckDbType`. */
  type: ArchiveColumnType;
  comment: string;
}

/**
 * Bumped when the line format changes; old objects keep their own value so a reader can tell them apart.
 * 2: one object per stream batch and partition; `tenant` moved from the line into the path (a partition).
 * 3: `requested_at_ms` (when the caller asked for the message; the SLO clock starts there), appended last,
 *    so older lines read it as null.
 */
export const ARCHIVE_SCHEMA_VERSION = 3;

export const ARCHIVE_COLUMNS = [
  { name: 'schema_version', type: 'int', comment: 'Archive line format version' },
  { name: 'dedupe_key', type: 'string', comment: 'Readable dedupe key (ledger partition key)' },
  { name: 'record_kind', type: 'string', comment: 'delivery | blocked | invalid' },
  { name: 'event_id', type: 'string', comment: 'Business event id' },
  { name: 'purpose', type: 'string', comment: 'Registered purpose' },
  { name: 'channel', type: 'string', comment: 'email | sms' },
  { name: 'recipient_ref', type: 'string', comment: 'Opaque recipient reference (never an address)' },
  { name: 'logical_key', type: 'string', comment: 'Logical notification across channels' },
  { name: 'from_state', type: 'string', comment: 'State left (null for the first transition)' },
  { name: 'to_state', type: 'string', comment: 'State entered' },
  { name: 'version', type: 'int', comment: 'Row version this transition produced (1 = creation)' },
  { name: 'transition_at', type: 'string', comment: 'Transition time, ISO-8601 UTC' },
  { name: 'transition_at_ms', type: 'bigint', comment: 'Transition time, epoch ms' },
  { name: 'actor', type: 'string', comment: 'Worker, reconciler, evidence source or operator:<id>' },
  { name: 'reason', type: 'string', comment: 'Short machine-readable reason' },
  { name: 'content_hash', type: 'string', comment: 'Keyed content hash (h1:…)' },
  { name: 'policy_version', type: 'string', comment: 'Purpose policy version in force' },
  { name: 'template_id', type: 'string', comment: 'Template id' },
  { name: 'template_revision', type: 'string', comment: 'Template revision' },
  { name: 'template_owner', type: 'string', comment: 'application | provider' },
  { name: 'idempotency_key', type: 'string', comment: 'Provider idempotency key (hash of the dedupe key)' },
  { name: 'transport', type: 'string', comment: 'Transport name once chosen' },
  {
    name: 'transport_message_id',
    type: 'string',
    comment: 'Transport request/message id of this transition',
  },
  { name: 'attempt', type: 'int', comment: 'Provider attempt number' },
  { name: 'resend_of', type: 'string', comment: 'Dedupe key this row resends (operator-approved)' },
  { name: 'superseded_by', type: 'string', comment: 'Dedupe key that superseded this row' },
  { name: 'stream_event_id', type: 'string', comment: 'DynamoDB stream event id' },
  { name: 'stream_sequence_number', type: 'string', comment: 'DynamoDB stream sequence number' },
  { name: 'stream_arrival_at_ms', type: 'bigint', comment: 'Stream ApproximateCreationDateTime, epoch ms' },
  {
    name: 'requested_at_ms',
    type: 'bigint',
    comment: 'When the caller asked for the message (publish time, or sendAt when later), epoch ms',
  },
] as const satisfies readonly ArchiveColumn[];

export type ArchiveColumnName = (typeof ARCHIVE_COLUMNS)[number]['name'];

type ValueOf<T extends ArchiveColumnType> = T extends 'string' ? string : number;

/** One archived line: every column present, `null` when the row did not have the value. */
export type ArchiveLine = {
  [C in (typeof ARCHIVE_COLUMNS)[number] as C['name']]: ValueOf<C['type']> | null;
};

/** One transition as derived from a stream image: the line plus the tenant, which becomes its partition. */
export type ArchiveRecord = ArchiveLine & { tenant: string | null };

/**
 * The partition columns, outermost first. Athena projects both (`tenant` injected: every query must name
 * one tenant with an equality, so a tenant's audit never lists another tenant's objects; `dt` as a date
 * range); DuckDB reads both from the Hive-style path.
 */
export const ARCHIVE_TENANT_PARTITION = { name: 'tenant', type: 'string' } as const;
export const ARCHIVE_PARTITION = { name: 'dt', type: 'string', format: 'yyyy-MM-dd' } as const;
export const ARCHIVE_PARTITIONS = [ARCHIVE_TENANT_PARTITION, ARCHIVE_PARTITION] as const;

/** The partition of a transition whose row carries no tenant (tenants start with a letter or digit). */
export const NO_TENANT = '_none';

/**
 * Every archived object lives under this prefix:
 * `transitions/tenant=<tenant>/dt=YYYY-MM-DD/<first sequence>-<last sequence>.jsonl.gz`.
 */
export const ARCHIVE_PREFIX = 'transitions/';

/** The table name every named query uses, in Athena (Glue) and DuckDB alike. */
export const ARCHIVE_TABLE = 'transitions';

const DUCKDB_TYPES: Record<ArchiveColumnType, string> = {
  string: 'VARCHAR',
  bigint: 'BIGINT',
  int: 'INTEGER',
};

export const duckDbType = (type: ArchiveColumnType): string => DUCKDB_TYPES[type];

/** The `columns={…}` struct literal for DuckDB's `read_json`, derived from ARCHIVE_COLUMNS. */
export const duckDbColumnsLiteral = (): string =>
  `{${ARCHIVE_COLUMNS.map((c) => `'${c.name}': '${duckDbType(c.type)}'`).join(', ')}}`;
