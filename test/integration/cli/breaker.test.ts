import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { SpendBreaker } from '../../../lib/rate/SpendBreaker.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';

// DynamoDB Local (global setup) and the real CLI in a child process.
const run = promisify(execFile);
const CLI = new URL('../../../bin/sendproof.mjs', import.meta.url).pathname;
let statePath: string;
let breaker: SpendBreaker;

const cli = (...args: string[]) => run('node', [CLI, 'breaker', ...args, '--state', statePath]);

beforeAll(async () => {
  const { raw, doc, endpoint } = localDynamo();
  const table = await createLedgerTable(raw, 'breaker');
  breaker = new SpendBreaker(doc, table, { workerId: 'dispatch:test' });
  statePath = join(mkdtempSync(join(tmpdir(), 'sendproof-brk-')), 'state.json');
  writeFileSync(
    statePath,
    JSON.stringify({
      region: 'us-east-1',
      dynamodb: endpoint,
      ledgerTable: table,
      suppressionTable: 'unused',
    }),
  );
});

describe('sendproof breaker reset', () => {
  it('closes an open breaker, recorded with operator and reason; a reset without a reason is refused', async () => {
    // Prepare: two sends allowed, the third opens the breaker.
    const policy = { maxSends: 2, windowSeconds: 3600, cooldownSeconds: 3600 };
    const now = Date.now();
    for (let i = 0; i < 3; i += 1) await breaker.count('password-reset', 'NG', policy, now);
    // Act
    const refused = await cli('reset', 'password-reset', 'NG', '--operator', 'ops-ana').catch((e) => e);
    const bad = await cli(
      'reset',
      'password-reset',
      'Nigeria',
      '--operator',
      'ops-ana',
      '--reason',
      'ok then',
    ).catch((e) => e);
    const reset = JSON.parse(
      (
        await cli(
          'reset',
          'password-reset',
          'ng',
          '--operator',
          'ops-ana',
          '--reason',
          'fraud ruled out',
          '--json',
        )
      ).stdout,
    );
    const shown = JSON.parse((await cli('show', 'password-reset', 'NG', '--json')).stdout);
    const after = await breaker.count('password-reset', 'NG', policy, Date.now());
    // Assess
    expect(refused.code).not.toBe(0);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('country');
    expect(reset).toMatchObject({ reset: true, previous: { state: 'open' } });
    expect(shown.state).toBe('closed');
    expect(shown.history.map((e: { s: string; by: string; why: string }) => [e.s, e.by, e.why])).toEqual([
      ['breaker_open', 'dispatch:test', 'threshold_crossed:2/3600s'],
      ['breaker_closed', 'operator:ops-ana', 'operator_reset:fraud ruled out'],
    ]);
    expect(after).toEqual({ ok: true });
  });
});
