import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
// Type-only: DuckDB's native module costs ~0.6 s to load, so only an audit command loads it (see withAudit).
import type { AuditResult, DuckDbAudit } from '../../lib/archive/DuckDbAudit.js';
import { loadNamedQueries, type NamedQuery } from '../../lib/archive/namedQueries.js';

/**
 * `sendproof audit …`: the compliance queries of `queries/` run locally through DuckDB over the archive
 * folder (the archiver's mirror: the same gzip JSON Lines objects it puts in S3). The query text is the
 * very text Athena's named queries run.
 */

interface AuditOptions {
  archiveDir?: string;
  json?: boolean;
}

const out = (text: string): void => {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
};

/** `--archive-dir`, else `archiveDir` from `.local/state.json` (the local stack), else `.local/archive`. */
export const defaultArchiveDir = (cwd: string = process.cwd()): string => {
  const statePath = resolve(cwd, '.local', 'state.json');
  if (existsSync(statePath)) {
    try {
      const state = JSON.parse(readFileSync(statePath, 'utf8')) as { archiveDir?: unknown };
      if (typeof state.archiveDir === 'string' && state.archiveDir) return resolve(cwd, state.archiveDir);
    } catch {
      // An unreadable state file is the local stack's problem; fall back to the default folder.
    }
  }
  return resolve(cwd, '.local', 'archive');
};

const cell = (value: unknown): string =>
  value === null || value === undefined
    ? '-'
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);

/** A plain text table: one header line, one line per row, columns padded to their widest cell. */
export const formatTable = ({ columns, rows }: AuditResult): string => {
  if (rows.length === 0) return '(no rows)';
  const cells = rows.map((row) => columns.map((c) => cell(row[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(columns),
    line(widths.map((w) => '-'.repeat(w))),
    ...cells.map(line),
    `(${rows.length} rows)`,
  ].join('\n');
};

const withAudit = async (options: AuditOptions, run: (audit: DuckDbAudit) => Promise<AuditResult>) => {
  const { DuckDbAudit, hasArchiveObjects } = await import('../../lib/archive/DuckDbAudit.js');
  const dir = options.archiveDir ? resolve(options.archiveDir) : defaultArchiveDir();
  // "(no rows)" from an empty or wrong folder would read as a clean bill: say there was nothing to read.
  if (!hasArchiveObjects(dir))
    process.stderr.write(`sendproof: no archive objects under ${dir}; every query will be empty\n`);
  const audit = await DuckDbAudit.open(dir);
  try {
    const result = await run(audit);
    out(options.json ? JSON.stringify(result.rows, null, 2) : formatTable(result));
  } finally {
    audit.close();
  }
};

const auditOptions = (command: Command): Command =>
  command
    .option(
      '--archive-dir <dir>',
      'archive folder (default: archiveDir of .local/state.json, else .local/archive)',
    )
    .option('--json', 'rows as a JSON array');

const describeQuery = (q: NamedQuery): string =>
  [
    `${q.name} ${q.parameters.map((p) => `<${p.name}>`).join(' ')}`.trimEnd(),
    `  ${q.description}`,
    ...q.parameters.map((p) => `    <${p.name}> (${p.type}) ${p.description}`),
  ].join('\n');

export const register = (program: Command): void => {
  const audit = program
    .command('audit')
    .description('Compliance queries over the local transition archive (DuckDB; same SQL as Athena)');

  audit
    .command('list')
    .description('List the named queries with their parameters')
    .option('--json', 'as JSON')
    .action((options: AuditOptions) => {
      const queries = loadNamedQueries();
      out(
        options.json
          ? JSON.stringify(
              queries.map(({ name, description, parameters }) => ({ name, description, parameters })),
              null,
              2,
            )
          : queries.map(describeQuery).join('\n\n'),
      );
    });

  auditOptions(
    audit.command('sql').description('Run any SQL against the table `transitions`').argument('<sql>'),
  ).action((sql: string, options: AuditOptions) => withAudit(options, (a) => a.query(sql)));

  for (const query of loadNamedQueries()) {
    const command = audit.command(query.name).description(query.description);
    for (const p of query.parameters) command.argument(`<${p.name}>`, `${p.description} (${p.type})`);
    auditOptions(command).action((...args: unknown[]) => {
      const values = args.slice(0, query.parameters.length) as string[];
      const options = args[query.parameters.length] as AuditOptions;
      return withAudit(options, (a) => a.runNamed(query, values));
    });
  }
};
