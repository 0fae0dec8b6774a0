import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNamedQueries } from '../../../lib/archive/namedQueries.js';
import { ENV } from '../../../lib/config.js';
import { bundleLambda } from '../../../scripts/lambdaBundle.mjs';

/**
 * The console Lambda as deployed: its bundle (scripts/lambdaBundle.mjs, what SendproofFunction's synth and
 * the package build deploy) alone in a folder, as in /var/task, with Athena configured. The named queries
 * used to be read from `<package root>/queries`, which in a bundle is the folder above it (`/var/queries`
 * in Lambda): the console's init failed with ENOENT. They are embedded at build time now.
 */
const PROBE = `
const { handler } = await import(process.argv[1]);
const answer = await handler({
  rawPath: '/api/queries',
  headers: {},
  requestContext: {
    http: { method: 'GET', sourceIp: '127.0.0.1' },
    authorizer: { jwt: { claims: { sub: 'operator-1', 'cognito:groups': '[operator]' } } },
  },
});
process.stdout.write(JSON.stringify(answer));
process.exit(0);
`;

describe('the console bundle', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-console-bundle-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('initialises with Athena configured and lists the named queries of queries/', async () => {
    await bundleLambda('functions/console/index.ts', dir, { logLevel: 'silent' });
    const run = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', PROBE, pathToFileURL(join(dir, 'index.mjs')).href],
      {
        // No folder beside the bundle but its own; nothing here is contacted (listing reads no archive).
        cwd: dir,
        encoding: 'utf8',
        timeout: 60_000,
        env: {
          PATH: process.env.PATH ?? '',
          [ENV.ledgerTable]: 'console-bundle-ledger',
          [ENV.athenaWorkGroup]: 'console-bundle-workgroup',
          [ENV.athenaDatabase]: 'console_bundle_audit',
          [ENV.region]: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        },
      },
    );
    expect(run.stderr).not.toMatch(/ENOENT/);
    expect(run.status, run.stderr.slice(0, 800)).toBe(0);
    const answer = JSON.parse(run.stdout) as { statusCode: number; body: string };
    expect(answer.statusCode).toBe(200);
    const listed = (JSON.parse(answer.body) as { items: Array<{ name: string; description: string }> }).items;
    // The same queries, parsed from the same text, as the repository's queries/ folder.
    expect(listed).toEqual(
      loadNamedQueries().map(({ name, description, parameters }) => ({ name, description, parameters })),
    );
    expect(listed.length).toBeGreaterThan(5);
  }, 90_000);
});
