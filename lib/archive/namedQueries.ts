import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromPackageRoot } from '../packageRoot.js';

/**
 * The named audit queries. `queries/*.sql` is the one source of truth: Athena's CfnNamedQuery resources
 * (infra/) and the local DuckDB audit (`sendproof audit`) both run exactly this text.
 *
 * File format: a comment header, then one statement against the table `transitions`, parameters as `?`.
 *   -- name: explain-notification
 *   -- description: first line
 *   --   continuation line
 *   -- param: key string What the first ? means
 */
export type QueryParameterType = 'string' | 'bigint';

export interface QueryParameter {
  name: string;
  type: QueryParameterType;
  description: string;
}

export interface NamedQuery {
  name: string;
  description: string;
  /** In the order of the `?` placeholders. */
  parameters: QueryParameter[];
  /** The statement without its header. */
  sql: string;
}

export const QUERIES_DIR = `${fromPackageRoot('queries')}/`;

/**
 * How every named query begins: the one read of `transitions`, pinned to one tenant (equality, as
 * Athena's injected projection requires) and a `dt` range (partition pruning), keeping one copy of each
 * transition. A transition stored twice (a regrouped stream retry) has the same dedupe key, version,
 * time and to_state in both copies; a row re-created after its TTL has new times, so its transitions stay distinct.
 * The test suite asserts every file in `queries/` starts with exactly this text.
 */
export const UNIQUE_TRANSITIONS_CTE = `WITH unique_transitions AS (
  -- One row per transition: a retried stream batch can store a transition twice (under two batch
  -- keys), and both copies carry the same dedupe_key, version, time and to_state (two delivery facts
  -- of one version in one millisecond differ in to_state: both stay). Prunes to one tenant, days.
  SELECT *
  FROM (
    SELECT
      *,
      row_number() OVER (
        PARTITION BY dedupe_key, version, transition_at_ms, to_state
        ORDER BY stream_sequence_number
      ) AS copy_number
    FROM transitions
    WHERE tenant = ? AND dt BETWEEN ? AND ?
  ) copies
  WHERE copy_number = 1
)`;

export class NamedQueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NamedQueryError';
  }
}

/** Counts `?` placeholders outside string literals and comments. */
export const countPlaceholders = (sql: string): number =>
  sql
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/--[^\n]*/g, '')
    .split('?').length - 1;

export const parseNamedQuery = (text: string, source: string): NamedQuery => {
  const lines = text.split(/\r?\n/);
  let name = '';
  const description: string[] = [];
  const parameters: QueryParameter[] = [];
  let index = 0;
  let inDescription = false;
  for (; index < lines.length; index++) {
    const line = lines[index]!;
    if (!line.startsWith('--')) break;
    const body = line.slice(2).trim();
    const field = /^(name|description|param):\s*(.*)$/.exec(body);
    if (field) {
      inDescription = field[1] === 'description';
      if (field[1] === 'name') name = field[2]!.trim();
      else if (field[1] === 'description') description.push(field[2]!.trim());
      else {
        const param = /^([a-z_][a-z0-9_]*)\s+(string|bigint)\s+(.+)$/.exec(field[2]!.trim());
        if (!param) throw new NamedQueryError(`${source}: bad parameter line "${body}"`);
        parameters.push({ name: param[1]!, type: param[2] as QueryParameterType, description: param[3]! });
      }
    } else if (inDescription && body) {
      description.push(body);
    }
  }
  const sql = lines.slice(index).join('\n').trim();
  if (!/^[a-z][a-z0-9-]*$/.test(name)) throw new NamedQueryError(`${source}: missing or bad "-- name:"`);
  if (description.length === 0) throw new NamedQueryError(`${source}: missing "-- description:"`);
  if (!sql) throw new NamedQueryError(`${source}: no SQL after the header`);
  if (sql.replace(/;\s*$/, '').includes(';')) throw new NamedQueryError(`${source}: one statement per file`);
  const placeholders = countPlaceholders(sql);
  if (placeholders !== parameters.length)
    throw new NamedQueryError(
      `${source}: ${placeholders} placeholders but ${parameters.length} declared parameters`,
    );
  return { name, description: description.join(' '), parameters, sql: sql.replace(/;\s*$/, '') };
};

/**
 * `queries/*.sql` by file name as one JSON text, defined only in a Lambda bundle (scripts/lambdaBundle.mjs
 * embeds the files at build time): a bundle has no package folder, so `QUERIES_DIR` would point outside it (`/var/queries`).
 */
declare const __SENDPROOF_NAMED_QUERIES__: string | undefined;
const embedded = (): Readonly<Record<string, string>> | undefined =>
  typeof __SENDPROOF_NAMED_QUERIES__ === 'undefined'
    ? undefined
    : (JSON.parse(__SENDPROOF_NAMED_QUERIES__) as Record<string, string>);

/**
 * Every named query in `queries/` (in a bundle: the copies embedded at build time), sorted by name. Throws
 * NamedQueryError on a malformed file.
 */
export const loadNamedQueries = (dir: string = QUERIES_DIR): NamedQuery[] => {
  const inBundle = dir === QUERIES_DIR ? embedded() : undefined;
  const files: Array<[file: string, text: string]> = inBundle
    ? Object.entries(inBundle)
    : readdirSync(dir).map((file) => [
        file,
        file.endsWith('.sql') ? readFileSync(join(dir, file), 'utf8') : '',
      ]);
  const queries = files
    .filter(([file]) => file.endsWith('.sql'))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([file, text]) => {
      const query = parseNamedQuery(text, file);
      if (`${query.name}.sql` !== file) throw new NamedQueryError(`${file}: name must match the file name`);
      return query;
    });
  return queries.sort((a, b) => a.name.localeCompare(b.name));
};

export type BoundValue = string | bigint;

/** Turns command-line arguments into typed values, in placeholder order. */
export const bindArguments = (query: NamedQuery, args: readonly string[]): BoundValue[] => {
  if (args.length !== query.parameters.length)
    throw new NamedQueryError(
      `${query.name} takes ${query.parameters.length} argument(s): ${query.parameters.map((p) => `<${p.name}>`).join(' ') || '(none)'}`,
    );
  return query.parameters.map((param, i) => {
    const raw = args[i]!;
    if (param.type === 'string') return raw;
    if (!/^-?\d+$/.test(raw)) throw new NamedQueryError(`${param.name} must be an integer, got "${raw}"`);
    return BigInt(raw);
  });
};

/** Athena's ExecutionParameters: each value as the SQL literal Athena substitutes for its `?`. */
export const athenaExecutionParameters = (query: NamedQuery, args: readonly string[]): string[] =>
  bindArguments(query, args).map((value) =>
    typeof value === 'bigint' ? value.toString() : `'${value.replace(/'/g, "''")}'`,
  );

/**
 * A tenant as the SQL literal Athena reads the injected `tenant` partition from. The allow-list is the
 * tenant alphabet (lib/domain/intent.ts IdentifierSchema: letters, digits, `. _ @ + -`, 1-128
 * characters), so the literal can never hold a quote, a backslash or a comment; anything else is refused
 * before Athena is called.
 */
const TENANT_LITERAL = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/;

export const tenantLiteral = (tenant: string): string => {
  if (!TENANT_LITERAL.test(tenant))
    throw new NamedQueryError(
      `tenant must be 1-128 characters of letters, digits and . _ @ + - (starting with a letter or digit), got ${JSON.stringify(tenant.slice(0, 140))}`,
    );
  return `'${tenant}'`;
};

const TENANT_PLACEHOLDER = 'WHERE tenant = ? AND';

/**
 * What Athena runs for a named query: the query's text with its `tenant` placeholder replaced by the
 * validated literal, and the other arguments as ExecutionParameters (each the literal Athena substitutes
 * for its `?`). `tenant` is a partition projected with the `injected` type, and Athena's documentation
 * requires the injected values to be "literals or expressions that can be evaluated without reading any
 * data" (https://docs.aws.amazon.com/athena/latest/ug/partition-projection-dynamic-id-partitioning.html);
 * it does not say that an execution parameter is one (docs/audit.md), so the one value that decides which
 * objects Athena may list is a literal in the statement, built here and only here. DuckDB binds the same
 * text's `?` as it always did.
 */
export const athenaStatement = (
  query: NamedQuery,
  args: readonly string[],
): { sql: string; parameters: string[] } => {
  const parameters = athenaExecutionParameters(query, args);
  if (query.parameters[0]?.name !== 'tenant' || !query.sql.startsWith(UNIQUE_TRANSITIONS_CTE))
    throw new NamedQueryError(`${query.name}: the first parameter must be the tenant of the shared CTE`);
  const sql = `${UNIQUE_TRANSITIONS_CTE.replace(TENANT_PLACEHOLDER, `WHERE tenant = ${tenantLiteral(args[0]!)} AND`)}${query.sql.slice(UNIQUE_TRANSITIONS_CTE.length)}`;
  return { sql, parameters: parameters.slice(1) };
};
