import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  type DuckDBConnection,
  DuckDBInstance,
  type DuckDBType,
  DuckDBTypeId,
  type DuckDBValue,
  type Json,
} from '@duckdb/node-api';
import { type BoundValue, bindArguments, type NamedQuery } from './namedQueries.js';
import {
  ARCHIVE_COLUMNS,
  ARCHIVE_PARTITION,
  ARCHIVE_PARTITIONS,
  ARCHIVE_PREFIX,
  ARCHIVE_TABLE,
  ARCHIVE_TENANT_PARTITION,
  duckDbColumnsLiteral,
  duckDbType,
} from './schema.js';

export type AuditRow = Record<string, Json>;

export interface AuditResult {
  columns: string[];
  rows: AuditRow[];
}

const sqlString = (value: string): string => `'${value.replace(/'/g, "''")}'`;

/**
 * Trino names the archive queries use that DuckDB spells differently, defined once as macros so the
 * query text in `queries/` runs unchanged on both engines:
 * - `approx_percentile(x, p)` (Trino) → `quantile_disc(x, p)`: like Trino's digest on small sets, it
 *   returns a value that occurs in the data rather than an interpolation.
 */
export const DUCKDB_COMPAT_MACROS = ['CREATE MACRO approx_percentile(x, p) AS quantile_disc(x, p)'];

/** Whether the folder holds any archive object at all (an empty result means something only then). */
export const hasArchiveObjects = (archiveDir: string): boolean => {
  const root = join(archiveDir, ARCHIVE_PREFIX);
  if (!existsSync(root)) return false;
  const dirs = (path: string, prefix: string) =>
    readdirSync(path, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && entry.name.startsWith(`${prefix}=`))
      .map((entry) => join(path, entry.name));
  return dirs(root, ARCHIVE_TENANT_PARTITION.name).some((tenant) =>
    dirs(tenant, ARCHIVE_PARTITION.name).some((day) =>
      readdirSync(day).some((file) => file.endsWith('.jsonl.gz')),
    ),
  );
};

/** The `transitions` view over the local archive folder, typed by ARCHIVE_COLUMNS (same as Glue). */
export const transitionsViewSql = (archiveDir: string): string => {
  const glob = join(
    archiveDir,
    ARCHIVE_PREFIX,
    `${ARCHIVE_TENANT_PARTITION.name}=*`,
    `${ARCHIVE_PARTITION.name}=*`,
    '*.jsonl.gz',
  );
  const hiveTypes = ARCHIVE_PARTITIONS.map((p) => `'${p.name}': 'VARCHAR'`).join(', ');
  return `CREATE OR REPLACE VIEW ${ARCHIVE_TABLE} AS SELECT * FROM read_json(${sqlString(glob)}, format = 'newline_delimited', compression = 'gzip', columns = ${duckDbColumnsLiteral()}, hive_partitioning = true, hive_types = {${hiveTypes}})`;
};

// An empty archive still answers every query (with no rows) instead of failing on an empty glob.
const emptyTableSql = (): string =>
  `CREATE OR REPLACE TABLE ${ARCHIVE_TABLE} (${[
    ...ARCHIVE_COLUMNS.map((c) => `${c.name} ${duckDbType(c.type)}`),
    ...ARCHIVE_PARTITIONS.map((p) => `${p.name} VARCHAR`),
  ].join(', ')})`;

const INTEGER_TYPES = new Set<DuckDBTypeId>([
  DuckDBTypeId.BIGINT,
  DuckDBTypeId.UBIGINT,
  DuckDBTypeId.HUGEINT,
  DuckDBTypeId.UHUGEINT,
  DuckDBTypeId.DECIMAL,
]);

/** DuckDB's JSON rows carry BIGINT (and DECIMAL) as strings; numbers that fit become numbers again. */
const normalise = (value: Json, type: DuckDBType): Json => {
  if (value === null) return null;
  if (INTEGER_TYPES.has(type.typeId) && typeof value === 'string') {
    const number = Number(value);
    return Number.isSafeInteger(number) || type.typeId === DuckDBTypeId.DECIMAL ? number : value;
  }
  if ((type.typeId === DuckDBTypeId.LIST || type.typeId === DuckDBTypeId.ARRAY) && Array.isArray(value)) {
    const element = (type as unknown as { valueType: DuckDBType }).valueType;
    return value.map((item) => normalise(item, element));
  }
  return value;
};

/**
 * The local audit engine: an in-memory DuckDB whose `transitions` view reads the archive folder (the
 * same gzip JSON Lines objects the archiver puts in S3, Hive-partitioned by `tenant` and `dt`).
 */
export class DuckDbAudit {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
  ) {}

  static async open(archiveDir: string): Promise<DuckDbAudit> {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    for (const macro of DUCKDB_COMPAT_MACROS) await connection.run(macro);
    await connection.run(hasArchiveObjects(archiveDir) ? transitionsViewSql(archiveDir) : emptyTableSql());
    return new DuckDbAudit(instance, connection);
  }

  async query(sql: string, values: readonly BoundValue[] = []): Promise<AuditResult> {
    const reader = await this.connection.runAndReadAll(
      sql,
      values.length ? (values as DuckDBValue[]) : undefined,
    );
    const columns = reader.columnNames();
    const types = reader.columnTypes();
    const rows = reader
      .getRowObjectsJson()
      .map((row) =>
        Object.fromEntries(columns.map((name, i) => [name, normalise(row[name] ?? null, types[i]!)])),
      );
    return { columns, rows };
  }

  /** Runs a named query with its arguments as given on a command line (converted to the declared types). */
  runNamed(query: NamedQuery, args: readonly string[]): Promise<AuditResult> {
    return this.query(query.sql, bindArguments(query, args));
  }

  close(): void {
    this.connection.closeSync();
    this.instance.closeSync();
  }
}
