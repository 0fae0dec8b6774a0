import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DispatchEdge } from '../../lib/dispatch/Dispatcher.js';
import { parseIntent } from '../../lib/domain/intent.js';
import { deriveDedupeKey, identityOf } from '../../lib/domain/keys.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../lib/ledger/port.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../lib/simulator/ProviderSimulator.js';
import type { CrashWorkerInput, ReplayReport } from '../support/crashWorker.js';
import { CONTENT_KEY, pdfAttachment } from '../support/dispatchHarness.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../support/dynamo.js';
import { healthReportIntent, resetIntent } from '../support/fixtures.js';

/**
 * The crash matrix, with real processes: for every edge × channel × (single, fallback) a dispatcher in a
 * child process kills itself with SIGKILL at the edge; after its real 1 s lease has expired (real time,
 * real wait: a seconds/milliseconds mix-up shows here), another process replays every intent.
 * Servers: DynamoDB Local (the run's), the provider simulator on loopback (a test double).
 */
const WORKER_SOURCE = fileURLToPath(new URL('../support/crashWorker.ts', import.meta.url));
const TEMPLATES_DIR = fileURLToPath(new URL('../../templates/', import.meta.url));
let worker = '';

/** One bundle per run: each of the 22 processes then starts without transpiling hundreds of modules. */
const bundleWorker = async (): Promise<string> => {
  const outfile = join(mkdtempSync(join(tmpdir(), 'sendproof-crash-')), 'crashWorker.mjs');
  await build({
    entryPoints: [WORKER_SOURCE],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    // CommonJS dependencies (the AWS SDK) call require(); give the ESM bundle one.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  });
  return outfile;
};
const EDGES: DispatchEdge[] = [
  'before_claim',
  'after_claim',
  'after_dispatching',
  'after_provider',
  'after_outcome',
];
const LEASE_MS = 1_000;
const CONCURRENT_PROCESSES = 6;

interface Case {
  name: string;
  edge: DispatchEdge;
  channel: 'email' | 'sms';
  mode: 'single' | 'fallback';
  body: string;
  /** Dedupe keys (readable + hash) of the crashed channel and of the other channel of a fallback. */
  target: { pk: string; hash: string };
  other?: { pk: string; hash: string };
}

interface Crash {
  signal: NodeJS.Signals | null;
  code: number | null;
  at: number;
}

const purposes = new PurposeRegistry();
const keyOf = (body: string, channel: 'email' | 'sms') => {
  const parsed = parseIntent(body, { purposes, clock: { now: () => Date.now() } });
  if (!parsed.ok) throw parsed.error;
  const key = deriveDedupeKey(identityOf(parsed.value.intent, parsed.value.policy, channel));
  return { pk: key.readable, hash: key.hash };
};

const runWorker = (input: CrashWorkerInput): Promise<{ crash: Crash; stdout: string; stderr: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [worker, JSON.stringify(input)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += String(d);
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      resolve({ crash: { code, signal, at: Date.now() }, stdout, stderr }),
    );
  });

let sim: RunningProviderSimulator;
let ledger: DynamoLedger;
let base: Omit<CrashWorkerInput, 'bodies' | 'workerId'>;
const cases: Case[] = [];
const crashes = new Map<string, Crash>();
const afterCrash = new Map<string, DeliveryRecord | undefined>();
const acceptedBeforeReplay = new Map<string, number>();
const replays = new Map<string, ReplayReport>();
let longLease: { body: string; pk: string; crash?: Crash; replay?: ReplayReport; row?: DeliveryRecord };

const acceptances = (hash: string) =>
  sim.requests().filter((r) => r.idempotencyKey === hash && r.outcome === 'accepted').length;

beforeAll(async () => {
  worker = await bundleWorker();
  sim = await startProviderSimulator();
  const { raw, doc, endpoint } = localDynamo();
  const table = await createLedgerTable(raw, 'crash');
  const suppressionTable = await createSuppressionTable(raw);
  ledger = new DynamoLedger(doc, table);
  base = {
    endpoint,
    table,
    suppressionTable,
    simulatorUrl: sim.url,
    leaseMs: LEASE_MS,
    contentHashKey: CONTENT_KEY,
    templatesDir: TEMPLATES_DIR,
  };
  const attachment = pdfAttachment();
  for (const edge of EDGES) {
    for (const channel of ['email', 'sms'] as const) {
      for (const mode of ['single', 'fallback'] as const) {
        const id = `${edge}-${channel}-${mode}`.replace(/_/g, '-');
        const intent =
          mode === 'single'
            ? resetIntent({
                eventId: `crash-${id}`,
                channels: [channel],
                recipient: { ref: `user-${id}`, email: `${id}@example.com`, phone: '+15555550100' },
              })
            : healthReportIntent({
                eventId: `crash-${id}`,
                recipient: { ref: `patient-${id}`, email: `${id}@example.com`, phone: '+15555550101' },
                attachments: [attachment],
              });
        const body = JSON.stringify(intent);
        const target = keyOf(body, channel);
        const other = mode === 'fallback' ? keyOf(body, channel === 'email' ? 'sms' : 'email') : undefined;
        // To crash on the SMS of a fallback, the email must definitively fail first: the provider rejects it.
        if (mode === 'fallback' && channel === 'sms')
          sim.addFault({ match: { idempotencyKey: other!.hash }, fault: 'reject' });
        cases.push({
          name: `${edge} × ${channel} × ${mode}`,
          edge,
          channel,
          mode,
          body,
          target,
          ...(other ? { other } : {}),
        });
      }
    }
  }
  const longLeaseBody = JSON.stringify(
    resetIntent({ eventId: 'crash-long-lease', recipient: { ref: 'user-long', email: 'long@example.com' } }),
  );
  longLease = { body: longLeaseBody, pk: keyOf(longLeaseBody, 'email').pk };

  // Act 1: every crash in its own process, a few at a time (2 cores).
  const limit = pLimit(CONCURRENT_PROCESSES);
  const longCrash = limit(() =>
    runWorker({
      ...base,
      leaseMs: 120_000,
      workerId: 'dispatch:crash-long',
      bodies: [longLease.body],
      crash: { edge: 'after_claim', channel: 'email' },
    }),
  );
  await Promise.all(
    cases.map((c, i) =>
      limit(async () => {
        const { crash } = await runWorker({
          ...base,
          workerId: `dispatch:crash-${i}`,
          bodies: [c.body],
          crash: { edge: c.edge, channel: c.channel },
        });
        crashes.set(c.name, crash);
      }),
    ),
  );
  longLease.crash = (await longCrash).crash;
  for (const c of cases) {
    afterCrash.set(c.name, await ledger.get(c.target.pk, true));
    acceptedBeforeReplay.set(c.name, acceptances(c.target.hash));
  }

  // Act 2: wait (real time) until every 1 s lease has expired, then replay everything in one new process.
  const lastCrash = Math.max(...[...crashes.values()].map((c) => c.at));
  await new Promise((r) => setTimeout(r, Math.max(0, lastCrash + LEASE_MS + 100 - Date.now())));
  const replay = await runWorker({
    ...base,
    workerId: 'dispatch:replay',
    bodies: [...cases.map((c) => c.body), longLease.body],
    rounds: 3,
  });
  const reports = JSON.parse(replay.stdout.trim().split('\n').at(-1) ?? '[]') as ReplayReport[];
  if (reports.length !== cases.length + 1)
    throw new Error(`replay process failed: ${replay.stderr.slice(0, 2000)}`);
  for (const [i, c] of cases.entries()) replays.set(c.name, reports[i]!);
  longLease.replay = reports[cases.length];
  longLease.row = await ledger.get(longLease.pk, true);
}, 120_000);

afterAll(async () => {
  await sim?.stop();
  if (worker) rmSync(dirname(worker), { recursive: true, force: true });
});

/** What the crashed channel's row looked like between the crash and the replay, per edge. */
const EXPECTED_AFTER_CRASH: Partial<Record<DispatchEdge, { state?: string; accepted: number }>> = {
  before_claim: { accepted: 0 },
  after_claim: { state: 'claimed', accepted: 0 },
  after_dispatching: { state: 'dispatching', accepted: 0 },
  after_provider: { state: 'dispatching', accepted: 1 },
  after_outcome: { state: 'accepted', accepted: 1 },
};

describe('crash matrix: a worker killed (SIGKILL) at each edge, replayed by another process after its real 1 s lease', () => {
  const names = EDGES.flatMap((edge) =>
    (['email', 'sms'] as const).flatMap((channel) =>
      (['single', 'fallback'] as const).map((mode) => `${edge} × ${channel} × ${mode}`),
    ),
  );

  it('covers 20 cases: 5 edges × 2 channels × (single, fallback), each a process that really died', () => {
    // Assess
    expect(cases.map((c) => c.name)).toEqual(names);
    for (const c of cases) expect(crashes.get(c.name), c.name).toMatchObject({ signal: 'SIGKILL' });
  });

  it.each(names)(
    '%s: at most one provider acceptance, the row ends accepted, never claimable after dispatching',
    async (name) => {
      // Prepare
      const c = cases.find((x) => x.name === name)!;
      const report = replays.get(name)!;
      const expected = EXPECTED_AFTER_CRASH[c.edge]!;
      // Assess: the crash left the row exactly where the edge says
      expect(afterCrash.get(name)?.state).toBe(expected.state);
      expect(acceptedBeforeReplay.get(name)).toBe(expected.accepted);
      // Assess: the replay finished the message and no round raised
      expect(report.error).toBeUndefined();
      expect(report.rounds.at(-1)?.disposition).toBe('done');
      // Assess: one acceptance per key, for every key of the intent; `replayed` is the same message
      expect(acceptances(c.target.hash)).toBe(1);
      if (c.other) expect(acceptances(c.other.hash)).toBeLessThanOrEqual(1);
      const row = await ledger.get(c.target.pk, true);
      {
        expect(row?.state).toBe('accepted');
        const states = row!.history.map((h) => h.s);
        const firstDispatch = states.indexOf('dispatching');
        expect(firstDispatch).toBeGreaterThan(0);
        // Never claimable again once dispatching was recorded: no `claimed` after it.
        expect(states.slice(firstDispatch)).not.toContain('claimed');
        if (c.edge === 'after_dispatching' || c.edge === 'after_provider') {
          // The dead worker's dispatching lease became a visible unknown before the replay under the same key.
          expect(row!.history.some((h) => h.s === 'unknown' && h.why === 'dispatching_lease_expired')).toBe(
            true,
          );
          expect(report.rounds[0]?.disposition).toBe('retry_later');
        }
        if (c.edge === 'after_provider') expect(row!.history.at(-1)?.why).toBe('provider_replayed_original');
        if (c.edge === 'after_claim') expect(row!.history.map((h) => h.why)).toContain('lease_takeover');
      }
    },
  );

  it.each(names.filter((n) => n.endsWith('fallback')))(
    '%s: SMS is never active while the email is unknown',
    async (name) => {
      // Prepare
      const c = cases.find((x) => x.name === name)!;
      const report = replays.get(name)!;
      const email = await ledger.get(c.channel === 'email' ? c.target.pk : c.other!.pk, true);
      const sms = await ledger.get(c.channel === 'sms' ? c.target.pk : c.other!.pk, true);
      // Assess
      for (const round of report.rounds) expect(round.smsWhileEmailUnknown ?? false).toBe(false);
      if (c.channel === 'email') {
        expect(email?.state).toBe('accepted');
        expect(sms).toBeUndefined();
        expect(sim.requests().filter((r) => r.idempotencyKey === c.other!.hash)).toEqual([]);
      } else {
        expect(email?.state).toBe('rejected');
        expect(sms?.state).toBe('accepted');
        // The SMS row was created only after the email's definitive rejection.
        expect(sms!.createdAt).toBeGreaterThanOrEqual(email!.history.find((h) => h.s === 'rejected')!.at);
      }
    },
  );

  it('a lease is held in milliseconds of real time: a 1 s lease was taken over after ~1 s, a 120 s lease is left alone', () => {
    // Prepare
    const taken = cases.find((c) => c.name === 'after_claim × email × single')!;
    const claimedBy = afterCrash.get(taken.name)!;
    // Assess: the dead worker's lease was exactly LEASE_MS long on the row
    expect(claimedBy.leaseUntil! - claimedBy.history[0]!.at).toBe(LEASE_MS);
    // Assess: the long lease survives the replay: nothing sent, the message comes back later
    expect(longLease.crash?.signal).toBe('SIGKILL');
    expect(longLease.replay?.rounds.every((r) => r.disposition === 'retry_later')).toBe(true);
    expect(longLease.row?.state).toBe('claimed');
    expect(longLease.row?.leaseOwner).toBe('dispatch:crash-long');
    expect(longLease.row!.leaseUntil! - longLease.row!.history[0]!.at).toBe(120_000);
  });
});
