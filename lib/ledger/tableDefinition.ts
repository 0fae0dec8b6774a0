/**
 * The ledger's physical shape, in one place. The CDK constructs and the local stack both build their
 * tables from these constants, so a name, a key or an index cannot drift between AWS and a laptop.
 */
export const LEDGER_TABLE = {
  partitionKey: 'pk',
  /** Sparse: only rows in an attention state carry `attn`, so the index holds only what needs work. */
  attentionIndex: { name: 'attention', partitionKey: 'attn', sortKey: 'attnAt' },
  ttlAttribute: 'ttl',
  streamView: 'NEW_AND_OLD_IMAGES',
} as const;

/**
 * Evidence items live in the ledger table under `ev#<key hash>`: every provider event recorded for that
 * key and, only for a key too long for a row label, the pointer to the dedupe key (written with the
 * claim). A provider event carries the key hash and the row label (lib/domain/keys.ts), so its row is
 * one GetItem away, and its events one UpdateItem / GetItem, whatever the backlog.
 */
export const EVIDENCE_PREFIX = 'ev#';
export const evidenceItemKey = (idempotencyKey: string): string => `${EVIDENCE_PREFIX}${idempotencyKey}`;

/**
 * Sealed notifications (the sweep's work items) live in the ledger table under `seal#<logical key>`. The
 * reconciler's role may delete these items and no others (infra/constructs/LedgerTables.ts).
 */
export const SEAL_PREFIX = 'seal#';

export const SUPPRESSION_TABLE = {
  partitionKey: 'pk',
} as const;

/** CreateTable input for DynamoDB Local (the same keys and index the CDK table declares). */
export const ledgerCreateTableInput = (tableName: string) => ({
  TableName: tableName,
  BillingMode: 'PAY_PER_REQUEST' as const,
  AttributeDefinitions: [
    { AttributeName: LEDGER_TABLE.partitionKey, AttributeType: 'S' as const },
    { AttributeName: LEDGER_TABLE.attentionIndex.partitionKey, AttributeType: 'S' as const },
    { AttributeName: LEDGER_TABLE.attentionIndex.sortKey, AttributeType: 'N' as const },
  ],
  KeySchema: [{ AttributeName: LEDGER_TABLE.partitionKey, KeyType: 'HASH' as const }],
  GlobalSecondaryIndexes: [
    {
      IndexName: LEDGER_TABLE.attentionIndex.name,
      KeySchema: [
        { AttributeName: LEDGER_TABLE.attentionIndex.partitionKey, KeyType: 'HASH' as const },
        { AttributeName: LEDGER_TABLE.attentionIndex.sortKey, KeyType: 'RANGE' as const },
      ],
      Projection: { ProjectionType: 'ALL' as const },
    },
  ],
  StreamSpecification: { StreamEnabled: true, StreamViewType: LEDGER_TABLE.streamView },
});

export const suppressionCreateTableInput = (tableName: string) => ({
  TableName: tableName,
  BillingMode: 'PAY_PER_REQUEST' as const,
  AttributeDefinitions: [{ AttributeName: SUPPRESSION_TABLE.partitionKey, AttributeType: 'S' as const }],
  KeySchema: [{ AttributeName: SUPPRESSION_TABLE.partitionKey, KeyType: 'HASH' as const }],
});
