import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { CliTimingResult, CliTimingRow } from './results.js';
import { type BenchDynamo, claimShapedRecord, createLedgerTables, REPO_ROOT } from './stack.js';
import { median } from './stats.js';

const BIN = join(REPO_ROOT, 'bin', 'sendproof.mjs');
/** The AWS SDK's warning on Node 20; the CLI must not print it (its own environment turns it off). */
const SDK_WARNING = 'NodeVersionSupportWarning';

/**
 * Wall time of `sendproof --help`, `status <key>` and `stats` as a user runs them: a fresh `node
 * bin/sendproof.mjs` per call (so module loading is included) against a ledger table in the bench's
 * DynamoDB Local. One call of each first (not counted) warms the file cache. The environment has no
 * AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED, so a printed SDK warning is the CLI's own doing.
 */
export const measureCli = async (
  dynamo: BenchDynamo,
  runs: number,
  progress: (line: string) => void,
): Promise<CliTimingResult> => {
  // The compiled CLI, as `npm ci` (prepare) leaves it.
  const build = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'build.mjs')], { encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed: ${build.stderr}`);
  const { ledgerTable } = await createLedgerTables(dynamo.raw, 'cli', { stream: false });
  const row = claimShapedRecord();
  await dynamo.doc.send(new PutCommand({ TableName: ledgerTable, Item: row }));
  const target = [
    '--table',
    ledgerTable,
    '--endpoint-dynamodb',
    dynamo.local.endpoint,
    '--region',
    'us-east-1',
  ];
  const { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: _off, ...env } = process.env;
  const commands: Array<[string, string[]]> = [
    ['--help', ['--help']],
    ['status', ['status', row.pk, ...target]],
    ['stats', ['stats', ...target]],
  ];
  const once = (args: string[], extraEnv: Record<string, string> = {}) => {
    const started = performance.now();
    const out = spawnSync(process.execPath, [BIN, ...args], {
      encoding: 'utf8',
      env: { ...env, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', ...extraEnv },
    });
    const ms = performance.now() - started;
    if (out.status !== 0) throw new Error(`sendproof ${args[0]} exited ${out.status}: ${out.stderr}`);
    return { ms, sdkWarning: out.stderr.includes(SDK_WARNING) };
  };
  const rows: CliTimingRow[] = [];
  for (const [name, args] of commands) {
    once(args);
    const samples = Array.from({ length: runs }, () => once(args));
    const ms = samples.map((s) => Math.round(s.ms));
    rows.push({
      command: `sendproof ${name}`,
      ms,
      medianMs: median(ms),
      sdkWarning: samples.some((s) => s.sdkWarning),
    });
    progress(`cli: sendproof ${name} median ${median(ms)} ms over ${runs} runs`);
  }
  // For comparison, one call of --help from the TypeScript sources (tsx), as every call ran before the build.
  const fromSource = Math.round(once(['--help'], { SENDPROOF_FROM_SOURCE: '1' }).ms);
  progress(`cli: sendproof --help from source (tsx) ${fromSource} ms`);
  return { runs, rows, fromSourceHelpMs: fromSource };
};

export const renderCliTable = (cli: CliTimingResult): string =>
  [
    'CLI wall time (fresh node process per call, compiled dist/):',
    ...cli.rows.map(
      (r) =>
        `  ${r.command.padEnd(18)} median ${String(r.medianMs).padStart(5)} ms  (runs: ${r.ms.join(', ')})${r.sdkWarning ? '  AWS SDK warning printed!' : ''}`,
    ),
    `  ${'--help from source'.padEnd(18)} ${String(cli.fromSourceHelpMs).padStart(12)} ms  (tsx, for comparison)`,
  ].join('\n');
