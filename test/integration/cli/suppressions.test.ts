import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoSuppressionList } from '../../../lib/ledger/DynamoSuppressionList.js';
import { createSuppressionTable, localDynamo } from '../../support/dynamo.js';

// DynamoDB Local (global setup) and the real CLI in a child process.
const run = promisify(execFile);
const CLI = new URL('../../../bin/sendproof.mjs', import.meta.url).pathname;
let statePath: string;
let list: DynamoSuppressionList;

const cli = (...args: string[]) => run('node', [CLI, 'suppressions', ...args, '--state', statePath]);

beforeAll(async () => {
  const { raw, doc, endpoint } = localDynamo();
  const table = await createSuppressionTable(raw);
  list = new DynamoSuppressionList(doc, table);
  statePath = join(mkdtempSync(join(tmpdir(), 'sendproof-supp-')), 'state.json');
  writeFileSync(
    statePath,
    JSON.stringify({
      region: 'us-east-1',
      dynamodb: endpoint,
      ledgerTable: 'unused',
      suppressionTable: table,
    }),
  );
});

describe('sendproof suppressions', () => {
  it('lists a bounce-driven entry with its source, and removal needs a reason and an operator', async () => {
    // Prepare: what the evidence recorder writes for a permanent bounce
    await list.suppress('clinic', 'patient-9', 'email', 'bounced_permanent:ses:Bounce:Permanent/General', {
      source: 'ses:0100-abc:Bounce',
      at: Date.parse('2026-11-30T10:00:06Z'),
      by: 'evidence:ses',
    });
    // Act
    const listed = JSON.parse((await cli('list', '--tenant', 'clinic', '--json')).stdout);
    const refused = await cli('remove', 'clinic', 'patient-9', 'email', '--operator', 'alice').catch(
      (e) => e,
    );
    const removed = await cli(
      'remove',
      'clinic',
      'patient-9',
      'email',
      '--reason',
      'patient confirmed a new mailbox',
      '--operator',
      'alice',
    );
    const after = JSON.parse((await cli('list', '--json')).stdout);
    // Assess
    expect(listed).toEqual([
      {
        tenant: 'clinic',
        recipientRef: 'patient-9',
        channel: 'email',
        reason: 'bounced_permanent:ses:Bounce:Permanent/General',
        source: 'ses:0100-abc:Bounce',
        at: Date.parse('2026-11-30T10:00:06Z'),
        by: 'evidence:ses',
      },
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("required option '--reason <text>' not specified");
    expect(removed.stdout).toContain('lifted clinic patient-9 on email');
    expect(after).toEqual([]);
    expect(await list.isSuppressed('clinic', 'patient-9', 'email')).toEqual({ suppressed: false });
    expect((await list.changes('clinic', 'patient-9')).map((c) => [c.op, c.by, c.reason])).toEqual([
      ['add', 'evidence:ses', 'bounced_permanent:ses:Bounce:Permanent/General'],
      ['remove', 'operator:alice', 'patient confirmed a new mailbox'],
    ]);
  });

  it('lifting a provider_opt_out entry needs --force and records the operator and reason (issue 29)', async () => {
    // Prepare: what a refused send to an opted-out number writes
    await list.suppress('acme-games', 'player-stop', 'sms', 'opted_out', {
      source: 'provider_opt_out',
      at: Date.parse('2026-12-01T09:00:00Z'),
      by: 'provider:twilio:21610',
    });
    const args = ['acme-games', 'player-stop', 'sms', '--reason', 'player re-subscribed by phone call'];
    // Act
    const refused = await cli('remove', ...args, '--operator', 'carol').catch((e) => e);
    const stillThere = await list.isSuppressed('acme-games', 'player-stop', 'sms');
    const forced = await cli('remove', ...args, '--operator', 'carol', '--force', '--json');
    // Assess
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--force');
    expect(stillThere).toEqual({ suppressed: true, reason: 'opted_out' });
    expect(JSON.parse(forced.stdout)).toMatchObject({ removed: true, forced: true, operator: 'carol' });
    expect(await list.isSuppressed('acme-games', 'player-stop', 'sms')).toEqual({ suppressed: false });
    expect((await list.changes('acme-games', 'player-stop')).at(-1)).toMatchObject({
      op: 'remove',
      by: 'operator:carol',
      reason: 'player re-subscribed by phone call',
      forced: true,
    });
  });

  it('add validates its input and records the operator as the source', async () => {
    // Act
    const bad = await cli('add', 'acme', 'u-1', 'fax', '--reason', 'asked', '--operator', 'bob').catch(
      (e) => e,
    );
    await cli('add', 'acme', 'u-1', 'sms', '--reason', 'asked to stop texts', '--operator', 'bob');
    // Assess
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('channel');
    expect(await list.isSuppressed('acme', 'u-1', 'sms')).toEqual({
      suppressed: true,
      reason: 'asked to stop texts',
    });
    expect((await list.list('acme'))[0]).toMatchObject({ source: 'operator:bob', by: 'operator:bob' });
  });
});
