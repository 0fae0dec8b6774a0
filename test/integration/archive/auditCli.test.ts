import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultArchiveDir } from '../../../cli/commands/audit.js';
import { KEY, writeScenarioArchive } from '../../fixtures/archive/scenario.js';

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
      'cancellations(day_from,day_to)',
      'channel-outcomes-daily(day_from,day_to)',
      'explain-notification(key)',
      'intent-to-accepted-latency(day_from,day_to)',
      'manual-resolutions(day_from,day_to)',
      'multiple-acceptances()',
      'unknown-quarantined-older-than(cutoff_ms)',
    ]);
  });
});
