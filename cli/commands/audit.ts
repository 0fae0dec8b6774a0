import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { drainFailureQueue } from '../../lib/archive/backfill.js';
import { exportBundle, unpackBundleDocument, verifyBundle } from '../../lib/archive/bundle.js';
// Type-only: DuckDB's native module costs ~0.6 s to load, so only an audit command loads it (see withAudit).
import type { AuditResult, DuckDbAudit } from '../../lib/archive/DuckDbAudit.js';
import {
  createDigests,
  ensureLocalDigestKey,
  localSigner,
  publicKeyId,
  type VerifyReport,
  verifyArchive,
} from '../../lib/archive/digest.js';
import { loadNamedQueries, type NamedQuery } from '../../lib/archive/namedQueries.js';
import { DirStore } from '../../lib/archive/store.js';
import { dynamoDocumentClient, sqsClient } from '../../lib/aws/clients.js';
import { s3Client } from '../../lib/aws/storageClients.js';
import { loadConfig } from '../../lib/config.js';
import { archiveRetentionDaysOf, PurposeRegistry } from '../../lib/domain/purposes.js';
import { readLocalState } from '../localState.js';
import { archiveScope } from './explain.js';

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

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const day = (value: string, what: string): string => {
  if (!DAY.test(value)) throw new Error(`${what} must be YYYY-MM-DD, got "${value}"`);
  return value;
};

interface DigestCliOptions {
  archiveDir?: string;
  keyDir?: string;
  publicKey?: string;
  keyId?: string;
  tenant?: string;
  from?: string;
  to?: string;
  bundle?: string;
  json?: boolean;
}

const archiveDirOf = (options: DigestCliOptions) =>
  options.archiveDir ? resolve(options.archiveDir) : defaultArchiveDir();

/** The local stack's digest key lives next to the archive folder (`.local/keys`), unless told otherwise. */
const keyDirOf = (options: DigestCliOptions) =>
  options.keyDir ? resolve(options.keyDir) : join(dirname(archiveDirOf(options)), 'keys');

/** The trusted public key: `--public-key FILE` (PEM; e.g. from KMS GetPublicKey), else the local key's. */
const trustedKey = (options: DigestCliOptions): { pem: string; keyId: string } => {
  if (options.publicKey) {
    const pem = readFileSync(resolve(options.publicKey), 'utf8');
    return { pem, keyId: options.keyId ?? publicKeyId(pem) };
  }
  const local = ensureLocalDigestKey(keyDirOf(options));
  return { pem: local.publicKeyPem, keyId: local.keyId };
};

const describeReport = (report: VerifyReport & { bundleProblems?: string[] }): string =>
  [
    `${report.ok ? 'OK' : 'FAILED'}: ${report.digests} digests, ${report.objects} objects checked`,
    ...report.missing.map((k) => `MISSING  ${k}  (listed by a digest, not in the archive)`),
    ...report.changed.map((k) => `CHANGED  ${k}  (sha256 differs from its digest)`),
    ...report.added.map((k) => `ADDED    ${k}  (in no digest)`),
    ...report.badSignatures.map((k) => `BAD SIGNATURE  ${k}`),
    ...report.chainBreaks.map((k) => `CHAIN    ${k}`),
    ...(report.bundleProblems ?? []).map((k) => `BUNDLE   ${k}`),
  ].join('\n');

const registerDigests = (audit: Command): void => {
  audit
    .command('digest')
    .description('Write a signed digest (sha256 + record count of every new object, chained) per partition')
    .option('--archive-dir <dir>', 'archive folder (default: as for the queries)')
    .option('--key-dir <dir>', 'local signing key folder (default: keys/ next to the archive folder)')
    .option('--tenant <tenant>', 'only this tenant')
    .option('--json', 'the new digest keys as JSON')
    .action(async (options: DigestCliOptions) => {
      const key = ensureLocalDigestKey(keyDirOf(options));
      const written = await createDigests({
        store: new DirStore(archiveDirOf(options)),
        signer: localSigner(key.privateKeyPem, key.keyId),
        ...(options.tenant ? { tenant: options.tenant } : {}),
      });
      out(
        options.json
          ? JSON.stringify(written)
          : written.length
            ? written.join('\n')
            : '(nothing new to digest)',
      );
    });

  audit
    .command('verify')
    .description('Check digests (signatures, chain) and every object of a day range; or an export bundle')
    .option('--from <day>', 'first day, YYYY-MM-DD')
    .option('--to <day>', 'last day, YYYY-MM-DD')
    .option('--tenant <tenant>', 'only this tenant (default: every tenant)')
    .option(
      '--bundle <dir|file>',
      "verify an export bundle offline instead of the archive folder: its folder, or the console's JSON download",
    )
    .option('--archive-dir <dir>', 'archive folder (default: as for the queries)')
    .option('--key-dir <dir>', 'local signing key folder (default: keys/ next to the archive folder)')
    .option('--public-key <file>', 'trusted public key, PEM (default: the local key; a bundle: its own)')
    .option('--key-id <id>', 'key id the digests name for --public-key (e.g. the KMS key ARN)')
    .option('--json', 'the report as JSON')
    .action(async (options: DigestCliOptions) => {
      let report: VerifyReport & { bundleProblems?: string[] };
      if (options.bundle) {
        const pem = options.publicKey ? readFileSync(resolve(options.publicKey), 'utf8') : undefined;
        if (!pem)
          process.stderr.write(
            'sendproof: trusting the public key inside the bundle; pass --public-key to check against your own copy\n',
          );
        const path = resolve(options.bundle);
        if (statSync(path).isFile()) {
          // The console's download: the same files in one JSON document, unpacked and verified as a folder.
          const dir = mkdtempSync(join(tmpdir(), 'sendproof-bundle-'));
          try {
            await unpackBundleDocument(JSON.parse(readFileSync(path, 'utf8')), dir);
            report = await verifyBundle(dir, pem);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        } else report = await verifyBundle(path, pem);
      } else {
        if (!options.from || !options.to) throw new Error('verify needs --from and --to (or --bundle)');
        const key = trustedKey(options);
        report = await verifyArchive({
          store: new DirStore(archiveDirOf(options)),
          publicKeys: new Map([[key.keyId, key.pem]]),
          from: day(options.from, '--from'),
          to: day(options.to, '--to'),
          ...(options.tenant ? { tenant: options.tenant } : {}),
        });
      }
      out(options.json ? JSON.stringify(report, null, 2) : describeReport(report));
      if (!report.ok) process.exitCode = 1;
    });

  audit
    .command('export <keyOrEventId>')
    .description(
      'Write a bundle for a regulator: timeline (JSON, CSV), its archive objects, the digest chain segment',
    )
    .requiredOption('--out <dir>', 'bundle folder to write')
    .option('--tenant <tenant>', 'tenant of an event id (a dedupe key names its own)', 'default')
    .option('--from <day>', 'first archive day searched, YYYY-MM-DD', '2000-01-01')
    .option('--to <day>', 'last archive day searched (default: tomorrow, UTC)')
    .option('--archive-dir <dir>', 'archive folder (default: as for the queries)')
    .option('--key-dir <dir>', 'local signing key folder (default: keys/ next to the archive folder)')
    .option('--public-key <file>', 'public key to put in the bundle (default: the local key)')
    .option('--key-id <id>', 'key id the digests name for --public-key')
    .action(
      async (subject: string, options: DigestCliOptions & { out: string; tenant: string; from: string }) => {
        const [tenant, from, to] = archiveScope(subject, options);
        const key = trustedKey(options);
        const manifest = await exportBundle({
          store: new DirStore(archiveDirOf(options)),
          subject,
          tenant,
          from: day(from, '--from'),
          to: day(to, '--to'),
          outDir: resolve(options.out),
          publicKeyPem: key.pem,
          keyId: key.keyId,
        });
        out(
          `${resolve(options.out)}: ${manifest.transitions} transitions, ${manifest.objects.length} objects, ${manifest.digests.length} digests`,
        );
        if (manifest.digests.length === 0)
          process.stderr.write(
            'sendproof: no digest lists these objects yet; run `sendproof audit digest` first\n',
          );
      },
    );
};

interface BackfillCliOptions {
  state?: string;
  table?: string;
  failuresUrl?: string;
  bucket?: string;
  region?: string;
  json?: boolean;
}

const registerBackfill = (audit: Command): void => {
  audit
    .command('backfill')
    .description(
      "Archive, from the ledger rows' history, every batch the archiver gave up on (failure queue)",
    )
    .option('--state <file>', 'local stack state file (default: .local/state.json)')
    .option('--table <name>', 'ledger table (AWS)')
    .option('--failures-url <url>', "the archiver's failure queue URL (AWS)")
    .option('--bucket <name>', 'archive bucket (AWS)')
    .option('--region <region>', 'AWS region')
    .option('--json', 'the result as JSON')
    .action(async (options: BackfillCliOptions) => {
      const aws = Boolean(options.table || options.failuresUrl || options.bucket);
      const local = aws ? undefined : readLocalState(options.state);
      const table = options.table ?? local?.ledgerTable;
      const queueUrl = options.failuresUrl ?? local?.archiveFailuresUrl;
      const bucket = options.bucket ?? local?.bucket;
      if (!table || !queueUrl || !bucket)
        throw new Error('backfill needs --table, --failures-url and --bucket (or a running local stack)');
      const region = options.region ?? local?.region ?? 'us-east-1';
      const config = loadConfig();
      const at = (endpoint: string | undefined) => ({ region, ...(endpoint ? { endpoint } : {}) });
      const result = await drainFailureQueue({
        doc: dynamoDocumentClient(at(local?.dynamodb)),
        table,
        sqs: sqsClient(at(local?.sqs)),
        queueUrl,
        writer: {
          s3: s3Client(at(local?.s3)),
          bucket,
          ...(local ? { mirrorDir: local.archiveDir } : {}),
          // The deployment's purposes and default from this shell's SENDPROOF_* settings, as the archiver.
          retentionDaysOf: archiveRetentionDaysOf(
            PurposeRegistry.withOverrides(config.purposes),
            config.archiveRetentionDays ?? 365,
          ),
        },
      });
      out(
        options.json
          ? JSON.stringify(result, null, 2)
          : `${result.batches} batches backfilled: ${result.transitions} transitions in ${result.objects.length} objects${result.failed ? `; ${result.failed} failed and wait on the queue (${result.errors.join(', ')})` : ''}`,
      );
      if (result.failed) process.exitCode = 1;
    });
};

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

  registerDigests(audit);
  registerBackfill(audit);

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
