import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultArchiveDir } from '../../../cli/commands/audit.js';
import { DirStore } from '../../../lib/archive/store.js';
import { KEY, writeScenarioArchive } from '../../fixtures/archive/scenario.js';
import { scanBundle } from '../../reliability/secretScan.js';

const run = promisify(execFile);
// tsx resolved from this checkout, so the CLI can run with any working directory.
const tsx = createRequire(import.meta.url).resolve('tsx');
const cli = (args: string[], cwd?: string) =>
  run(process.execPath, ['--import', tsx, join(process.cwd(), 'cli/main.ts'), ...args], {
    ...(cwd ? { cwd } : {}),
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });

// The real CLI in a child process (tsx), reading a fixture archive folder through DuckDB.
describe('sendproof audit', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sendproof-audit-cli-'));
    await writeScenarioArchive(join(dir, 'archive'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('explain-notification --json prints the timeline with numbers as numbers', async () => {
    // Act
    const { stdout } = await cli([
      'audit',
      'explain-notification',
      'default',
      '2026-11-30',
      '2026-12-01',
      KEY.A,
      '--archive-dir',
      join(dir, 'archive'),
      '--json',
    ]);

    // Assess
    const rows = JSON.parse(stdout) as Array<Record<string, unknown>>;
    expect(rows.map((r) => r.to_state)).toEqual(['claimed', 'dispatching', 'unknown', 'accepted']);
    expect(rows[3]).toMatchObject({
      version: 4,
      transition_at_ms: 1796032860000,
      transport_message_id: 'ses-msg-A',
    });
  });

  it('sql runs ad-hoc SQL and the archive folder defaults to archiveDir in .local/state.json', async () => {
    // Prepare
    await mkdir(join(dir, '.local'), { recursive: true });
    await writeFile(join(dir, '.local', 'state.json'), JSON.stringify({ archiveDir: join(dir, 'archive') }));

    // Act
    const { stdout } = await cli(
      ['audit', 'sql', 'SELECT dt, count(*) AS n FROM transitions GROUP BY dt ORDER BY dt'],
      dir,
    );

    // Assess
    expect(defaultArchiveDir(dir)).toBe(join(dir, 'archive'));
    expect(stdout.split('\n').slice(0, 4)).toEqual([
      'dt          n',
      '----------  --',
      '2026-11-30  27',
      '2026-12-01  6',
    ]);
  });

  it('list names every query with its parameters', async () => {
    // Act
    const { stdout } = await cli(['audit', 'list', '--json']);

    // Assess
    const listed = JSON.parse(stdout) as Array<{ name: string; parameters: Array<{ name: string }> }>;
    expect(listed.map((q) => `${q.name}(${q.parameters.map((p) => p.name).join(',')})`)).toEqual([
      'accepted-not-delivered(tenant,day_from,day_to,cutoff_ms)',
      'cancellations(tenant,day_from,day_to)',
      'channel-outcomes-daily(tenant,day_from,day_to)',
      'delivery-facts-daily(tenant,day_from,day_to)',
      'explain-notification(tenant,day_from,day_to,key)',
      'intent-to-accepted-latency(tenant,day_from,day_to)',
      'latency-distribution(tenant,day_from,day_to)',
      'manual-resolutions(tenant,day_from,day_to)',
      'multiple-acceptances(tenant,day_from,day_to)',
      'slo-attainment(tenant,day_from,day_to,purpose,from_ms,to_ms,accept_within_ms,deliver_within_ms)',
      'states-over-time(tenant,day_from,day_to,bucket)',
      'unknown-quarantined-older-than(tenant,day_from,day_to,cutoff_ms)',
    ]);
  });

  it('digest, then verify names exactly the altered, deleted and inserted objects, and exits 1', async () => {
    // Prepare: a copy of the archive, digested by the CLI with a local key.
    const archive = join(dir, 'tamper', 'archive');
    await cp(join(dir, 'archive'), archive, { recursive: true });
    const digested = await cli(['audit', 'digest', '--archive-dir', archive, '--json']);
    const clean = await cli([
      'audit',
      'verify',
      '--from',
      '2026-11-30',
      '--to',
      '2026-12-01',
      '--archive-dir',
      archive,
    ]);
    const keys = await new DirStore(archive).list('transitions/');
    const inserted = 'transitions/tenant=default/dt=2026-12-01/inserted.jsonl.gz';

    // Act
    await writeFile(join(archive, keys[2]!), gzipSync('{"dedupe_key":"forged"}\n'));
    await unlink(join(archive, keys[3]!));
    await writeFile(join(archive, inserted), gzipSync('{"dedupe_key":"slipped-in"}\n'));
    const failed = await cli([
      'audit',
      'verify',
      '--from',
      '2026-11-30',
      '--to',
      '2026-12-01',
      '--archive-dir',
      archive,
    ]).catch((error: { code: number; stdout: string }) => error);

    // Assess
    expect(JSON.parse(digested.stdout)).toHaveLength(2);
    expect(clean.stdout).toMatch(/^OK: 2 digests, \d+ objects checked/);
    expect('code' in failed && failed.code).toBe(1);
    expect(
      failed.stdout
        .split('\n')
        .filter((l) => /^[A-Z]/.test(l))
        .slice(1),
    ).toEqual([
      `MISSING  ${keys[3]}  (listed by a digest, not in the archive)`,
      `CHANGED  ${keys[2]}  (sha256 differs from its digest)`,
      `ADDED    ${inserted}  (in no digest)`,
    ]);
  });

  it('export writes a bundle that verifies offline, holds no secret, and fails when its timeline is edited', async () => {
    // Prepare
    const archive = join(dir, 'export', 'archive');
    await cp(join(dir, 'archive'), archive, { recursive: true });
    await cli(['audit', 'digest', '--archive-dir', archive]);
    const bundle = join(dir, 'export', 'bundle');

    // Act
    const exported = await cli(['audit', 'export', 'evt-A', '--out', bundle, '--archive-dir', archive]);
    const verified = await cli(['audit', 'verify', '--bundle', bundle, '--json']);
    const timeline = JSON.parse(await readFile(join(bundle, 'timeline.json'), 'utf8'));
    const csv = await readFile(join(bundle, 'timeline.csv'), 'utf8');
    timeline[0].actor = 'someone-else';
    await writeFile(join(bundle, 'timeline.json'), JSON.stringify(timeline));
    const edited = await cli(['audit', 'verify', '--bundle', bundle]).catch(
      (error: { code: number; stdout: string }) => error,
    );

    // Assess
    expect(exported.stdout).toMatch(/: 7 transitions, \d+ objects, \d+ digests/);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, bundleProblems: [], badSignatures: [] });
    expect(timeline.map((r: { to_state: string }) => r.to_state)).toEqual([
      'claimed',
      'claimed',
      'dispatching',
      'dispatching',
      'accepted',
      'unknown',
      'accepted',
    ]);
    // Bundle version 2: each line says whose clock its time is, and the ledger time it is ordered by
    expect(csv.split('\n')[0]).toMatch(/^tenant,dt,clock,ledger_at,schema_version,dedupe_key,/);
    expect(csv.split('\n')).toHaveLength(9);
    expect('code' in edited && edited.code).toBe(1);
    expect(edited.stdout).toContain('BUNDLE   timeline.json does not match');
    const scan = scanBundle(bundle, ['rst-7Qx9-SECRET', '@example.com', '+1555']);
    expect(scan.files).toBeGreaterThanOrEqual(6);
    expect(scan.hits).toEqual([]);
  });
});
