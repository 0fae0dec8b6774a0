import {
  type AthenaClient,
  GetQueryExecutionCommand,
  GetQueryResultsCommand,
  type GetQueryResultsCommandOutput,
  StartQueryExecutionCommand,
  StopQueryExecutionCommand,
} from '@aws-sdk/client-athena';
import type { AuditResult, AuditRow } from '../archive/DuckDbAudit.js';
import {
  athenaStatement,
  loadNamedQueries,
  type NamedQuery,
  NamedQueryError,
} from '../archive/namedQueries.js';
import { athenaEngine } from './athenaEngine.js';
import { type AuditQueries, AuditQueryFailed } from './ports.js';

/** A query Athena did not finish: failed, cancelled, or still running when the console stopped waiting. */
export class AthenaQueryError extends AuditQueryFailed {
  constructor(
    readonly state: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'AthenaQueryError';
  }
}

export interface AthenaAuditOptions {
  client: AthenaClient;
  /** The archive's workgroup: it enforces the result location and encryption (infra/constructs/AuditArchive). */
  workGroup: string;
  /** The Glue database holding `transitions`. */
  database: string;
  queries?: NamedQuery[];
  /** First wait between GetQueryExecution polls; doubles to 2 s. Default 200 ms. */
  pollMs?: number;
  /** Give up (and StopQueryExecution) after this long. Default 25 s: under API Gateway's 30 s. */
  timeoutMs?: number;
  /** Rows read at most (the console shows 1000 and says whether there were more). Default 1001. */
  maxRows?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

type Column = { name: string; type: string };

/**
 * Athena's result cells are strings; typed as the DuckDB runner types them so the page and the CLI see the
 * same JSON from either engine: integers that fit a double as numbers, BIGINT as a string (as DuckDB's
 * JSON gives it), booleans, and null for a missing cell.
 */
const cellValue = (raw: string | undefined, type: string): AuditRow[string] => {
  if (raw === undefined) return null;
  switch (type) {
    case 'tinyint':
    case 'smallint':
    case 'integer':
    case 'double':
    case 'float':
    case 'real':
      return Number(raw);
    case 'boolean':
      return raw === 'true';
    default:
      return raw;
  }
};

const rowsOf = (page: GetQueryResultsCommandOutput, columns: Column[], skipHeader: boolean): AuditRow[] =>
  (page.ResultSet?.Rows ?? [])
    .slice(skipHeader ? 1 : 0)
    .map((row) =>
      Object.fromEntries(
        columns.map((column, i) => [column.name, cellValue(row.Data?.[i]?.VarCharValue, column.type)]),
      ),
    );

/**
 * The named audit queries in AWS: the same `queries/*.sql` text the local DuckDB runner executes, run in
 * the archive's Athena workgroup. The tenant goes into the statement as a literal built by
 * `athenaStatement` (lib/archive/namedQueries.ts: Athena's injected partition projection needs a literal;
 * the tenant is checked against a strict allow-list first); every other argument goes as an
 * ExecutionParameter, the literal Athena substitutes for its `?` (a string quoted with its quotes doubled,
 * an integer checked to be one), so no argument can change the statement.
 *
 *   StartQueryExecution ─► GetQueryExecution (poll: 200 ms, 400 ms, … 2 s) ─► SUCCEEDED ─► GetQueryResults (pages)
 *                                                    └─ FAILED / CANCELLED / too slow (StopQueryExecution) ─► AthenaQueryError
 */
export const athenaAuditQueries = (options: AthenaAuditOptions): AuditQueries => {
  const queries = options.queries ?? loadNamedQueries();
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 25_000;
  const maxRows = options.maxRows ?? 1001;
  return {
    engine: athenaEngine(options.workGroup),
    list: () => queries,
    async run(name, args): Promise<AuditResult> {
      const query = queries.find((q) => q.name === name);
      if (!query) throw new NamedQueryError(`no named query ${name}`);
      // Throws NamedQueryError (a 400 in the console) before Athena is called.
      // The tenant as a validated literal (Athena's injected projection), the rest as parameters.
      const { sql, parameters } = athenaStatement(query, args);
      const started = await options.client.send(
        new StartQueryExecutionCommand({
          QueryString: sql,
          WorkGroup: options.workGroup,
          QueryExecutionContext: { Database: options.database },
          ...(parameters.length ? { ExecutionParameters: parameters } : {}),
        }),
      );
      const id = started.QueryExecutionId;
      if (!id) throw new AthenaQueryError('UNKNOWN', 'Athena returned no query execution id');
      const deadline = now() + timeoutMs;
      let wait = options.pollMs ?? 200;
      for (;;) {
        const execution = await options.client.send(new GetQueryExecutionCommand({ QueryExecutionId: id }));
        const status = execution.QueryExecution?.Status;
        const state = status?.State ?? 'UNKNOWN';
        if (state === 'SUCCEEDED') break;
        if (state === 'FAILED' || state === 'CANCELLED')
          throw new AthenaQueryError(
            state,
            `${name}: ${state.toLowerCase()}${status?.StateChangeReason ? `: ${status.StateChangeReason}` : ''}`,
          );
        if (now() + wait > deadline) {
          await options.client
            .send(new StopQueryExecutionCommand({ QueryExecutionId: id }))
            .catch(() => undefined);
          throw new AthenaQueryError(
            state,
            `${name}: still ${state.toLowerCase()} after ${timeoutMs} ms; stopped`,
          );
        }
        await sleep(wait);
        wait = Math.min(2_000, wait * 2);
      }
      let columns: Column[] = [];
      const rows: AuditRow[] = [];
      let token: string | undefined;
      let first = true;
      do {
        const page = await options.client.send(
          new GetQueryResultsCommand({
            QueryExecutionId: id,
            MaxResults: Math.min(1000, maxRows - rows.length + (first ? 1 : 0)),
            ...(token ? { NextToken: token } : {}),
          }),
        );
        if (first)
          columns = (page.ResultSet?.ResultSetMetadata?.ColumnInfo ?? []).map((c) => ({
            name: c.Name ?? c.Label ?? '',
            type: (c.Type ?? 'varchar').toLowerCase(),
          }));
        // A SELECT's first row of the first page repeats the column names.
        rows.push(...rowsOf(page, columns, first));
        first = false;
        token = page.NextToken;
      } while (token && rows.length < maxRows);
      return { columns: columns.map((c) => c.name), rows: rows.slice(0, maxRows) };
    },
  };
};
