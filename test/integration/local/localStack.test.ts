import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDocumentClient } from '../../../lib/aws/clients.js';
import { isTerminal } from '../../../lib/domain/states.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import type { LocalState } from '../../../lib/local/LocalStack.js';
import { pdfAttachment } from '../../support/dispatchHarness.js';
import { healthReportIntent, MARKERS, receiptIntent, resetIntent } from '../../support/fixtures.js';

// Real servers, started by the real CLI in a child process: DynamoDB Local (Java), fauxqs (SQS + S3),
// aws-ses-v2-local, the provider simulator, and the functions worker running the Lambda handlers.
const run = promisify(execFile);
const CLI = new URL('../../../bin/sendproof.mjs', import.meta.url).pathname;
const stateDir = mkdtempSync(join(tmpdir(), 'sendproof-local-'));
const statePath = join(stateDir, 'state.json');
let stack: ChildProcess;
let state: LocalState;
let stackOutput = '';

const cli = async (...args: string[]) => {
  const { stdout } = await run(process.execPath, [CLI, ...args, '--state', statePath], { timeout: 60_000 });
  return stdout;
};
const audit = async (...args: string[]) => {
  const { stdout } = await run(
    process.execPath,
    [CLI, 'audit', ...args, '--archive-dir', state.archiveDir, '--json'],
    {
      timeout: 60_000,
    },
  );
  return JSON.parse(stdout) as Array<Record<string, unknown>>;
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  stack = spawn(process.execPath, [CLI, 'local', 'start', '--state-dir', stateDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stack.stdout?.on('data', (d) => {
    stackOutput += String(d);
  });
  stack.stderr?.on('data', (d) => {
    stackOutput += String(d);
  });
  const deadline = Date.now() + 90_000;
  while (!existsSync(statePath)) {
    if (Date.now() > deadline || stack.exitCode !== null)
      throw new Error(`local stack did not start:\n${stackOutput}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  state = JSON.parse(readFileSync(statePath, 'utf8')) as LocalState;
}, 120_000);

afterAll(async () => {
  if (stack.exitCode === null) stack.kill('SIGKILL');
});

describe('npm start: the local stack end to end', () => {
  it('delivers the seed scenarios through the CLI, recovers a dropped answer, archives everything, and leaks no secret', async () => {
    // Prepare: one SMS whose acceptance the simulator drops on the wire
    const endpoints = JSON.parse(await cli('local', 'endpoints', '--json')) as Record<string, string>;
    expect(Object.keys(endpoints).sort()).toEqual(
      [
        'archiveDir',
        'archiveFailuresUrl',
        'bucket',
        'dlqUrl',
        'dynamodb',
        'eventsLog',
        'queueUrl',
        's3',
        'ses',
        'simulator',
        'sqs',
        'webhook',
      ].sort(),
    );
    // The evidence endpoint is served: an unsigned webhook is refused before anything is read.
    const unsigned = await fetch(`${endpoints.webhook}/resend`, { method: 'POST', body: '{}' });
    expect(unsigned.status).toBe(401);
    const fault = await fetch(`${state.simulator}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ match: { channel: 'sms', to: '+15555550177' }, fault: 'accept_then_drop' }),
    });
    expect(fault.status).toBeLessThan(300);
    const intents = [
      resetIntent({ eventId: 'e2e-reset' }),
      receiptIntent({ eventId: 'e2e-receipt' }),
      healthReportIntent({ eventId: 'e2e-report', attachments: [pdfAttachment()] }),
      resetIntent({
        eventId: 'e2e-sms',
        channels: ['sms'],
        recipient: { ref: 'player-77', phone: '+15555550177' },
      }),
    ];
    const file = join(stateDir, 'intents.jsonl');
    writeFileSync(file, intents.map((i) => JSON.stringify(i)).join('\n'));

    // Act
    const published = JSON.parse(await cli('publish', file, '--json')) as Array<{
      ok: boolean;
      dedupeKeys: string[];
    }>;
    const ledger = dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb });
    let rows: DeliveryRecord[] = [];
    const deadline = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 500));
      const out = await ledger.send(new ScanCommand({ TableName: state.ledgerTable }));
      rows = ((out.Items ?? []) as DeliveryRecord[]).filter((r) => r.state);
    } while ((rows.length < 4 || !rows.every((r) => isTerminal(r.state))) && Date.now() < deadline);

    // Assess: final states
    expect(published.every((p) => p.ok)).toBe(true);
    expect(rows.map((r) => [r.eventId, r.channel, r.state]).sort()).toEqual([
      ['e2e-receipt', 'email', 'accepted'],
      ['e2e-report', 'email', 'accepted'],
      ['e2e-reset', 'email', 'accepted'],
      ['e2e-sms', 'sms', 'accepted'],
    ]);
    const sms = rows.find((r) => r.eventId === 'e2e-sms')!;
    // The lost answer is recovered by the provider's event feed (pulled by the reconcile run), by the
    // reconciler's lookup, or by the parked message's replay under the same enforced key; all end
    // accepted with the provider's one message id.
    const path = sms.history.map((h) => h.s);
    // The claim is written directly as dispatching (the read-only gates ran before it).
    expect(path.slice(0, 2)).toEqual(['dispatching', 'unknown']);
    expect([path.slice(2), sms.history.at(-1)?.by.split(':')[0]]).toSatisfy(
      ([rest, by]: [string[], string]) =>
        (rest.join() === 'accepted' && (by === 'reconciler' || by === 'evidence')) ||
        rest.join() === 'dispatching,accepted',
    );
    const requests = (await (await fetch(`${state.simulator}/_sim/requests`)).json()) as Array<{
      outcome: string;
      idempotencyKey: string;
    }>;
    expect(requests.filter((r) => r.outcome === 'accepted' || r.outcome === 'dropped')).toHaveLength(1);
    expect(new Set(requests.map((r) => r.idempotencyKey)).size).toBe(1);
    const messages = (await (
      await fetch(`${state.simulator}/v1/messages?idempotency_key=${sms.idempotencyKey}`)
    ).json()) as { data: Array<{ id: string }> };
    expect(messages.data.map((m) => m.id)).toEqual([sms.providerMessageId]);
    // The SES inbox got three emails; the report carries its PDF.
    const store = (await (await fetch(`${state.ses}/store`)).json()) as {
      emails: Array<{ subject: string; attachments?: unknown[] }>;
    };
    expect(store.emails).toHaveLength(3);
    expect(store.emails.some((e) => (e.attachments ?? []).length === 1)).toBe(true);
    // The archive has every transition the ledger has, once (delivery facts are counted apart).
    const ledgerTransitions = rows.reduce((n, r) => n + r.history.length, 0);
    let archived: Array<Record<string, unknown>> = [];
    const archiveDeadline = Date.now() + 30_000;
    do {
      await new Promise((r) => setTimeout(r, 500));
      archived = await audit(
        'sql',
        "SELECT dedupe_key, version FROM transitions WHERE record_kind <> 'delivery_fact'",
      );
    } while (archived.length < ledgerTransitions && Date.now() < archiveDeadline);
    expect(archived).toHaveLength(ledgerTransitions);
    const explained = (await audit(
      'explain-notification',
      sms.pk.split(':')[0]!,
      '2000-01-01',
      '2100-01-01',
      sms.pk,
    )) as Array<{ to_state: string }>;
    expect(explained.map((r) => r.to_state).filter((t) => !t.startsWith('delivery:'))).toEqual(path);
    // No secret or raw address in the ledger, the functions' logs and metrics, or the archive.
    const archiveText = readdirSync(join(state.archiveDir, 'transitions'), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.gz'))
      .map((f) => gunzipSync(readFileSync(join(state.archiveDir, 'transitions', f))).toString('utf8'))
      .join('\n');
    const log = readFileSync(state.functionsLog, 'utf8');
    expect(log.length).toBeGreaterThan(0);
    for (const haystack of [JSON.stringify(rows), log, archiveText]) {
      for (const secret of [MARKERS.token, MARKERS.email, MARKERS.phone, '+15555550177']) {
        expect(haystack).not.toContain(secret);
      }
    }
  }, 180_000);

  it('answers the operator commands against the running stack: stats, status, explain, reconcile, dlq, resolve', async () => {
    // Act
    const stats = JSON.parse(await cli('stats', '--json')) as {
      rows: number;
      byState: Record<string, number>;
    };
    const status = JSON.parse(await cli('status', 'e2e-sms', '--json')) as Array<{
      pk: string;
      state: string;
      history: unknown[];
      delivery?: { n?: number };
    }>;
    const explained = JSON.parse(await cli('explain', 'e2e-sms', '--json')) as {
      ledger: unknown[];
      archive: unknown[];
    };
    const reconciled = JSON.parse(await cli('reconcile', '--json')) as { processed: number };
    const dlq = JSON.parse(await cli('dlq', 'list', '--json')) as unknown[];
    // A decision is only for an unknown or quarantined row: on an accepted one it is refused, visibly.
    const refused = await cli(
      'resolve',
      status[0]!.pk,
      '--outcome',
      'accepted',
      '--reason',
      'checked',
      '--operator',
      'alice',
      '--json',
    ).then(
      () => undefined,
      (error: { code?: number; stdout?: string }) => error,
    );
    // Assess
    expect(stats).toMatchObject({ rows: 4, byState: { accepted: 4 } });
    expect(status).toEqual([expect.objectContaining({ state: 'accepted' })]);
    expect(explained.ledger).toHaveLength(1);
    // Every transition, plus the delivery facts the simulator's feed reported (sent, delivered).
    const archived = explained.archive as Array<{ to_state: string }>;
    expect(archived.filter((l) => !l.to_state.startsWith('delivery:'))).toHaveLength(
      status[0]!.history.length,
    );
    expect(reconciled.processed).toBe(0);
    expect(dlq).toEqual([]);
    expect(refused?.code).not.toBe(0);
    expect(refused?.stdout).toMatch(/"error"/);
    const after = JSON.parse(await cli('status', 'e2e-sms', '--json')) as Array<{
      state: string;
      history: unknown[];
    }>;
    expect(after[0]?.history).toHaveLength(status[0]!.history.length);
  }, 120_000);

  it('stops cleanly on Ctrl-C and leaves no process behind', async () => {
    // Act
    const exited = new Promise<number | null>((r) => stack.once('exit', (code) => r(code)));
    stack.kill('SIGINT');
    const code = await exited;
    // Assess
    expect(code).toBe(0);
    expect(alive(state.pids.dynamodb)).toBe(false);
    expect(alive(state.pids.functions)).toBe(false);
    expect(existsSync(statePath)).toBe(false);
  }, 60_000);
});
