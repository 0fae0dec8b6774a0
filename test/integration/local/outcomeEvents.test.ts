import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutcomeEventSchemaV1 } from '../../../lib/events/outcomeEvent.js';
import { type RunningEventReceiver, startEventReceiver } from '../../../lib/events/receiver.js';
import type { LocalState } from '../../../lib/local/LocalStack.js';
import { MARKERS, resetIntent } from '../../support/fixtures.js';

// Real servers, started by the real CLI: the local stack (DynamoDB Local, fauxqs, the SES inbox, the
// provider simulator, the functions worker with its outcome-events reader of the stream) and a caller's
// endpoint (lib/events/receiver.ts) that the local event bus POSTs to, as an API destination would.
const run = promisify(execFile);
const CLI = new URL('../../../bin/sendproof.mjs', import.meta.url).pathname;
const stateDir = mkdtempSync(join(tmpdir(), 'sendproof-events-'));
const statePath = join(stateDir, 'state.json');
let stack: ChildProcess;
let receiver: RunningEventReceiver;
let output = '';

const cli = async (...args: string[]) =>
  (await run(process.execPath, [CLI, ...args], { timeout: 60_000 })).stdout;

beforeAll(async () => {
  receiver = await startEventReceiver();
  stack = spawn(
    process.execPath,
    [
      CLI,
      'local',
      'start',
      '--state-dir',
      stateDir,
      '--email-transport',
      'simulator',
      '--no-console',
      '--events-endpoint',
      `acme-games=${receiver.url}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  stack.stdout?.on('data', (d) => {
    output += String(d);
  });
  stack.stderr?.on('data', (d) => {
    output += String(d);
  });
  const deadline = Date.now() + 90_000;
  while (!existsSync(statePath)) {
    if (Date.now() > deadline || stack.exitCode !== null)
      throw new Error(`local stack did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}, 120_000);

afterAll(async () => {
  if (stack && stack.exitCode === null) {
    const exited = new Promise((r) => stack.once('exit', r));
    stack.kill('SIGINT');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (stack.exitCode === null) stack.kill('SIGKILL');
  }
  await receiver?.stop();
});

describe('outcome events on the local stack', () => {
  it('a published reset reaches the caller endpoint and `events tail --json` as the same v1 events: accepted, then delivered', async () => {
    // Prepare
    const state = JSON.parse(readFileSync(statePath, 'utf8')) as LocalState;
    const file = join(stateDir, 'intents.json');
    writeFileSync(file, JSON.stringify([resetIntent({ eventId: 'rst_local1' })]));

    // Act
    await cli('publish', file, '--state', statePath);
    const deadline = Date.now() + 30_000;
    // The simulator reports delivery through its event feed, which the reconciler's pull reads.
    while (!receiver.unique().some((e) => e.eventId === 'rst_local1' && e.fact === 'delivered')) {
      if (Date.now() > deadline) throw new Error(`no delivered event arrived:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const tailed = (
      await cli('events', 'tail', '--no-follow', '--json', '--event', 'rst_local1', '--state', statePath)
    )
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    const human = await cli('events', 'tail', '--no-follow', '--event', 'rst_local1', '--state', statePath);

    // Assess
    const received = receiver.unique().filter((e) => e.eventId === 'rst_local1');
    expect(received.map((e) => e.type)).toEqual([
      'notification.state.accepted',
      'notification.fact.delivered',
    ]);
    expect(received[0]).toMatchObject({
      tenant: 'acme-games',
      channel: 'email',
      previousState: 'dispatching',
    });
    expect(received[0]!.providerMessageId).toMatch(/^sim_/);
    expect(tailed).toEqual(received);
    for (const event of tailed) expect(OutcomeEventSchemaV1.safeParse(event).success).toBe(true);
    expect(human).toMatch(
      /acme-games {2}password-reset {2}rst_local1 {2}player-73 {2}email {2}dispatching → accepted/,
    );
    expect(state.eventsLog).toBe(join(stateDir, 'events', 'outcomes.jsonl'));
    expect(readFileSync(state.eventsLog!, 'utf8')).not.toContain(MARKERS.email);
    expect(readFileSync(state.eventsLog!, 'utf8')).not.toContain(MARKERS.token);
  });
});
