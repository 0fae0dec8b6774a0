import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UriAttachmentStore } from '../../lib/attachments/AttachmentStore.js';
import { type DispatchEdge, Dispatcher } from '../../lib/dispatch/Dispatcher.js';
import { systemClock } from '../../lib/domain/clock.js';
import { parseIntent } from '../../lib/domain/intent.js';
import { deriveDedupeKey, identityOf } from '../../lib/domain/keys.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { isTerminal } from '../../lib/domain/states.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { DynamoSuppressionList } from '../../lib/ledger/DynamoSuppressionList.js';
import type { DeliveryRecord, SealedIntent } from '../../lib/ledger/port.js';
import { INTAKE_QUEUE } from '../../lib/queueDefinition.js';
import { Sweeper, type SweepSummary } from '../../lib/reconcile/Sweeper.js';
import { localSealer } from '../../lib/seal/IntentSealer.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../lib/simulator/ProviderSimulator.js';
import { FileTemplateStore } from '../../lib/templates/FileTemplateStore.js';
import { RestTransport } from '../../lib/transports/RestTransport.js';
import type { CrashWorkerInput, ReplayReport } from '../support/crashWorker.js';
import { CONTENT_KEY, NoticeQueue, pdfAttachment } from '../support/dispatchHarness.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../support/dynamo.js';
import { healthReportIntent, resetIntent } from '../support/fixtures.js';
import { TEST_SEAL_KEY } from '../support/sealKey.js';

/**
 * The crash matrix, with real processes: a dispatcher in a child process kills itself with SIGKILL at a
 * phase boundary; after its real 1 s lease has expired (real time, real wait: a seconds/milliseconds
 * mix-up shows here), another process replays every intent whose queue message still exists.
 *
 *   edge          the 5 edges × channel × (single, fallback)
 *   gate          after_gate: expired, suppressed, blocked by an attachment checksum
 *   retry_wait    a 429 whose Retry-After exceeds the inline budget: after_outcome, after_wait
 *   replay        a replay of an unknown row under an enforced key: after_dispatching, after_provider,
 *                 and after_outcome of a replay answered 429 (back to unknown, never rejected)
 *   last_receive  the queue's real maxReceiveCount reached: after_seal, after_claim, after_dispatching.
 *                 The message is gone with the process, so no replay: the ledger's sweep (run here, as
 *                 the reconcile function runs it) resumes the sealed intent by a notice on the intake
 *                 queue (in memory), delivered to a dispatcher.
 *
 * Servers: DynamoDB Local (the run's), the provider simulator on loopback (a test double).
 */
const WORKER_SOURCE = fileURLToPath(new URL('../support/crashWorker.ts', import.meta.url));
const TEMPLATES_DIR = fileURLToPath(new URL('../../templates/', import.meta.url));
let worker = '';

/** One bundle per run: each of the ~40 processes then starts without transpiling hundreds of modules. */
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
/** Shorter than the Retry-After below, so the 429 is parked (sealed, the message comes back when due). */
const INLINE_BUDGET_MS = 500;
const RETRY_AFTER_S = 10;

type Group = 'edge' | 'gate' | 'retry_wait' | 'replay' | 'last_receive';
type GateKind = 'expired' | 'suppressed' | 'blocked';

interface Case {
  name: string;
  group: Group;
  edge: DispatchEdge;
  channel: 'email' | 'sms';
  mode: 'single' | 'fallback';
  body: string;
  /** Dedupe keys (readable + hash) of the crashed channel and of the other channel of a fallback. */
  target: { pk: string; hash: string };
  other?: { pk: string; hash: string };
  /** Which time the edge is reached on the channel when the process dies (replays reach it twice). */
  occurrence?: number;
  /** Deliveries the crashing process makes before the edge (a replay needs the first to end unknown). */
  rounds?: number;
  receiveCount?: number;
  gate?: GateKind;
  /** The replay group: what the provider did to the first request. */
  first?: 'accept_then_drop' | 'status_500';
}

interface Crash {
  signal: NodeJS.Signals | null;
  code: number | null;
  at: number;
}

const purposes = new PurposeRegistry();
const keyOf = (body: string, channel: 'email' | 'sms') => {
  const parsed = parseIntent(body, { purposes, clock: { now: () => Date.now() }, allowExpired: true });
  if (!parsed.ok) throw parsed.error;
  const key = deriveDedupeKey(identityOf(parsed.value.intent, parsed.value.policy, channel));
  return { pk: key.readable, hash: key.hash };
};

interface Finished {
  crash: Crash;
  stdout: string;
  stderr: string;
}

/** A worker process; with `waitForGo` it loads everything, then waits for `go()` before delivering. */
const startWorker = (input: CrashWorkerInput): { go(): void; done: Promise<Finished> } => {
  const child = spawn(process.execPath, [worker, JSON.stringify(input)], {
    stdio: [input.waitForGo ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  const done = new Promise<Finished>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => {
      stdout += String(d);
    });
    child.stderr?.on('data', (d) => {
      stderr += String(d);
    });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      resolve({ crash: { code, signal, at: Date.now() }, stdout, stderr }),
    );
  });
  return { go: () => child.stdin?.end('go\n'), done };
};
const runWorker = (input: CrashWorkerInput): Promise<Finished> => startWorker(input).done;

const parseReports = (run: Finished, expected: number): ReplayReport[] => {
  const reports = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '[]') as ReplayReport[];
  if (reports.length !== expected) throw new Error(`replay process failed: ${run.stderr.slice(0, 2000)}`);
  return reports;
};

let sim: RunningProviderSimulator;
let ledger: DynamoLedger;
let base: Omit<CrashWorkerInput, 'bodies' | 'workerId'>;
const cases: Case[] = [];
const crashes = new Map<string, Crash>();
const afterCrash = new Map<string, DeliveryRecord | undefined>();
const sealAfterCrash = new Map<string, SealedIntent | undefined>();
const acceptedBeforeReplay = new Map<string, number>();
const storedBeforeReplay = new Map<string, number>();
const replays = new Map<string, ReplayReport>();
/** Last-receive rows as they stood after the replay process, which never saw their (dead) messages. */
const afterReplay = new Map<string, DeliveryRecord | undefined>();
const sweeps: SweepSummary[] = [];
let sweepRowsLeft: DeliveryRecord[] = [];
let sealsLeft: SealedIntent[] = [];
let longLease: { body: string; pk: string; crash?: Crash; replay?: ReplayReport; row?: DeliveryRecord };

const acceptances = (hash: string) =>
  sim.requests().filter((r) => r.idempotencyKey === hash && r.outcome === 'accepted').length;
/** Messages the provider stored for a key (an accept_then_drop's acceptance counts: its answer was lost). */
const stored = (hash: string) => sim.messages().filter((m) => m.idempotencyKey === hash).length;
const requestsFor = (hash: string) => sim.requests().filter((r) => r.idempotencyKey === hash);
const logicalKeyOf = (row: DeliveryRecord | undefined) => row?.logicalKey;

const singleIntent = (id: string, channel: 'email' | 'sms', overrides = {}) =>
  resetIntent({
    eventId: `crash-${id}`,
    channels: [channel],
    recipient: { ref: `user-${id}`, email: `${id}@example.com`, phone: '+15555550100' },
    ...overrides,
  });

const addCase = (c: Omit<Case, 'target' | 'other'> & { otherChannel?: boolean }) => {
  const target = keyOf(c.body, c.channel);
  const other = c.mode === 'fallback' ? keyOf(c.body, c.channel === 'email' ? 'sms' : 'email') : undefined;
  const { otherChannel: _o, ...rest } = c;
  cases.push({ ...rest, target, ...(other ? { other } : {}) });
  return cases.at(-1)!;
};

const SWEEP_BOUND_MS = 15_000;

beforeAll(async () => {
  worker = await bundleWorker();
  sim = await startProviderSimulator();
  const { raw, doc, endpoint } = localDynamo();
  const table = await createLedgerTable(raw, 'crash');
  const suppressionTable = await createSuppressionTable(raw);
  ledger = new DynamoLedger(doc, table);
  const suppressions = new DynamoSuppressionList(doc, suppressionTable);
  base = {
    endpoint,
    table,
    suppressionTable,
    simulatorUrl: sim.url,
    leaseMs: LEASE_MS,
    contentHashKey: CONTENT_KEY,
    templatesDir: TEMPLATES_DIR,
    maxReceiveCount: INTAKE_QUEUE.maxReceiveCount,
    inlineRetryBudgetMs: INLINE_BUDGET_MS,
    maxWaitMs: RETRY_AFTER_S * 1000 + 500,
  };
  const attachment = pdfAttachment();

  // The edge group: every edge × channel × (single, fallback).
  for (const edge of EDGES) {
    for (const channel of ['email', 'sms'] as const) {
      for (const mode of ['single', 'fallback'] as const) {
        const id = `${edge}-${channel}-${mode}`.replace(/_/g, '-');
        const intent =
          mode === 'single'
            ? singleIntent(id, channel)
            : healthReportIntent({
                eventId: `crash-${id}`,
                recipient: { ref: `patient-${id}`, email: `${id}@example.com`, phone: '+15555550101' },
                attachments: [attachment],
              });
        const c = addCase({
          name: `${edge} × ${channel} × ${mode}`,
          group: 'edge',
          edge,
          channel,
          mode,
          body: JSON.stringify(intent),
        });
        // To crash on the SMS of a fallback, the email must definitively fail first: the provider rejects it.
        if (mode === 'fallback' && channel === 'sms')
          sim.addFault({ match: { idempotencyKey: c.other!.hash }, fault: 'reject' });
      }
    }
  }

  // The gate group: a gate refuses, writes its final state, and the process dies at after_gate.
  for (const [gate, channel] of [
    ['expired', 'email'],
    ['expired', 'sms'],
    ['suppressed', 'email'],
    ['suppressed', 'sms'],
  ] as const) {
    const id = `gate-${gate}-${channel}`;
    const intent = singleIntent(
      id,
      channel,
      gate === 'expired' ? { expiresAt: new Date(Date.now() - 1_000).toISOString() } : {},
    );
    if (gate === 'suppressed') await suppressions.suppress('acme-games', `user-${id}`, channel, 'complaint');
    addCase({
      name: `after_gate (${gate}) × ${channel} × single`,
      group: 'gate',
      edge: 'after_gate',
      channel,
      mode: 'single',
      body: JSON.stringify(intent),
      gate,
    });
  }
  addCase({
    name: 'after_gate (blocked: attachment checksum) × email × fallback',
    group: 'gate',
    edge: 'after_gate',
    channel: 'email',
    mode: 'fallback',
    gate: 'blocked',
    body: JSON.stringify(
      healthReportIntent({
        eventId: 'crash-gate-blocked',
        recipient: { ref: 'patient-gate-blocked', email: 'blocked@example.com', phone: '+15555550102' },
        attachments: [{ ...attachment, sha256: 'b'.repeat(64) }],
      }),
    ),
  });

  // The replay group: the first request ends unknown (answer lost, or a 500), the replay under the same
  // key is the one that dies. after_outcome: the replay was answered 429 and went back to unknown.
  for (const [edge, channel, first] of [
    ['after_dispatching', 'email', 'accept_then_drop'],
    ['after_provider', 'email', 'accept_then_drop'],
    ['after_dispatching', 'sms', 'status_500'],
    ['after_provider', 'sms', 'status_500'],
    ['after_outcome', 'email', 'accept_then_drop'],
  ] as const) {
    const id = `replay-${edge}-${channel}`.replace(/_/g, '-');
    const c = addCase({
      name: `replay ${edge}${edge === 'after_outcome' ? ' (429 on the replay)' : ''} × ${channel} (first: ${first})`,
      group: 'replay',
      edge,
      channel,
      mode: 'single',
      body: JSON.stringify(singleIntent(id, channel)),
      occurrence: 2,
      rounds: 3,
      first,
    });
    sim.addFault({ match: { idempotencyKey: c.target.hash }, fault: first });
    if (edge === 'after_outcome')
      sim.addFault({ match: { idempotencyKey: c.target.hash }, fault: 'status_429', retryAfterSeconds: 1 });
  }

  // The last receive: the queue will not deliver this message again; the ledger holds the sealed intent.
  for (const edge of ['after_seal', 'after_claim', 'after_dispatching'] as const) {
    for (const channel of ['email', 'sms'] as const) {
      const id = `last-${edge}-${channel}`.replace(/_/g, '-');
      addCase({
        name: `last receive ${edge} × ${channel} × single`,
        group: 'last_receive',
        edge,
        channel,
        mode: 'single',
        body: JSON.stringify(singleIntent(id, channel)),
        receiveCount: INTAKE_QUEUE.maxReceiveCount,
      });
    }
  }
  addCase({
    name: 'last receive after_dispatching × email × fallback',
    group: 'last_receive',
    edge: 'after_dispatching',
    channel: 'email',
    mode: 'fallback',
    receiveCount: INTAKE_QUEUE.maxReceiveCount,
    body: JSON.stringify(
      healthReportIntent({
        eventId: 'crash-last-fallback',
        recipient: { ref: 'patient-last-fallback', email: 'last-fb@example.com', phone: '+15555550103' },
        attachments: [attachment],
      }),
    ),
  });

  // The retry_wait group: its redelivery must come while the Retry-After still runs (see Act 1).
  for (const edge of ['after_outcome', 'after_wait'] as const) {
    for (const channel of ['email', 'sms'] as const) {
      const id = `retry-${edge}-${channel}`.replace(/_/g, '-');
      const c = addCase({
        name: `retry_wait ${edge} (429, Retry-After ${RETRY_AFTER_S} s) × ${channel} × single`,
        group: 'retry_wait',
        edge,
        channel,
        mode: 'single',
        body: JSON.stringify(singleIntent(id, channel)),
      });
      sim.addFault({
        match: { idempotencyKey: c.target.hash },
        fault: 'status_429',
        retryAfterSeconds: RETRY_AFTER_S,
      });
    }
  }

  const longLeaseBody = JSON.stringify(
    resetIntent({ eventId: 'crash-long-lease', recipient: { ref: 'user-long', email: 'long@example.com' } }),
  );
  longLease = { body: longLeaseBody, pk: keyOf(longLeaseBody, 'email').pk };

  // Act 1: every crash in its own process, a few at a time (2 cores). The retry_wait crashes go first,
  // and a replay process that started up beforehand redelivers them the moment they died: the
  // redelivery then comes before the Retry-After is over, however slow process start-up is.
  const limit = pLimit(CONCURRENT_PROCESSES);
  const snapshot = async (c: Case) => {
    const row = await ledger.get(c.target.pk, true);
    afterCrash.set(c.name, row);
    const logicalKey = logicalKeyOf(row) ?? (await sealOfBody(c.body))?.logicalKey;
    sealAfterCrash.set(c.name, logicalKey ? await ledger.getSeal(logicalKey) : undefined);
    acceptedBeforeReplay.set(c.name, acceptances(c.target.hash));
    storedBeforeReplay.set(c.name, stored(c.target.hash));
  };
  const crashOne = (c: Case) =>
    limit(async () => {
      const { crash } = await runWorker({
        ...base,
        workerId: `dispatch:crash-${cases.indexOf(c)}`,
        bodies: [c.body],
        crash: { edge: c.edge, channel: c.channel, ...(c.occurrence ? { occurrence: c.occurrence } : {}) },
        ...(c.rounds ? { rounds: c.rounds } : {}),
        ...(c.receiveCount ? { receiveCount: c.receiveCount } : {}),
      });
      crashes.set(c.name, crash);
    });
  const retryCases = cases.filter((c) => c.group === 'retry_wait');
  const retryReplayer = startWorker({
    ...base,
    workerId: 'dispatch:replay-retry',
    bodies: retryCases.map((c) => c.body),
    rounds: 3,
    waitForGo: true,
  });
  const retryCrashes = Promise.all(retryCases.map(crashOne)).then(async () => {
    for (const c of retryCases) await snapshot(c);
    retryReplayer.go();
  });
  const longCrash = limit(() =>
    runWorker({
      ...base,
      leaseMs: 120_000,
      workerId: 'dispatch:crash-long',
      bodies: [longLease.body],
      crash: { edge: 'after_claim', channel: 'email' },
    }),
  );
  const rest = cases.filter((c) => c.group !== 'retry_wait');
  await Promise.all([retryCrashes, ...rest.map(crashOne)]);
  longLease.crash = (await longCrash).crash;
  for (const c of rest) await snapshot(c);
  for (const [i, report] of parseReports(await retryReplayer.done, retryCases.length).entries())
    replays.set(retryCases[i]!.name, report);

  // Act 2: wait (real time) until every 1 s lease has expired, then replay, in one new process, every
  // intent whose message the queue still holds (a last receive's message died with its process).
  const lastCrash = Math.max(...[...crashes.values()].map((c) => c.at));
  await new Promise((r) => setTimeout(r, Math.max(0, lastCrash + LEASE_MS + 100 - Date.now())));
  const replayed = rest.filter((c) => c.group !== 'last_receive');
  const reports = parseReports(
    await runWorker({
      ...base,
      workerId: 'dispatch:replay',
      bodies: [...replayed.map((c) => c.body), longLease.body],
      rounds: 3,
    }),
    replayed.length + 1,
  );
  for (const [i, c] of replayed.entries()) replays.set(c.name, reports[i]!);
  longLease.replay = reports[replayed.length];
  longLease.row = await ledger.get(longLease.pk, true);
  for (const c of cases.filter((x) => x.group === 'last_receive'))
    afterReplay.set(c.name, await ledger.get(c.target.pk, true));

  // Act 3: the ledger's sweep, as the reconcile function runs it, until every seal is released: resume
  // notices go to an in-memory intake queue and from there to a dispatcher (the only code that sends).
  const notices = new NoticeQueue();
  const transports = {
    email: new RestTransport({ baseUrl: sim.url, channel: 'email' }),
    sms: new RestTransport({ baseUrl: sim.url, channel: 'sms' }),
  };
  const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const resumer = new Dispatcher({
    ledger,
    suppressions,
    renderer: new FileTemplateStore(TEMPLATES_DIR),
    transports,
    attachments: new UriAttachmentStore(),
    purposes,
    clock: systemClock,
    contentHashKey: CONTENT_KEY,
    sealer: localSealer(Buffer.from(TEST_SEAL_KEY, 'utf8')),
    workerId: 'dispatch:resumed',
    leaseMs: LEASE_MS,
    maxReceiveCount: INTAKE_QUEUE.maxReceiveCount,
    inlineRetryBudgetMs: INLINE_BUDGET_MS,
    logger: silent,
    random: () => 0.5,
  });
  const sweepUntil = Date.now() + SWEEP_BOUND_MS;
  for (let run = 1; Date.now() < sweepUntil; run += 1) {
    sweeps.push(
      await new Sweeper({
        ledger,
        transports,
        clock: systemClock,
        publisher: notices,
        runId: `crash-${run}`,
        graceMs: 300,
        recheckMs: 500,
        // No bounce will come in this test: an accepted fallback channel's seal may go at once.
        fallbackHoldMs: 0,
      }).sweep(),
    );
    await notices.deliver(resumer);
    sealsLeft = (await ledger.listDue(Number.MAX_SAFE_INTEGER, { limit: 100 })).items;
    if (sealsLeft.length === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  sweepRowsLeft = [];
  for (const c of cases) {
    const row = await ledger.get(c.target.pk, true);
    if (row && !isTerminal(row.state)) sweepRowsLeft.push(row);
  }
}, 120_000);

/** The seal of a notification that has no row yet (a crash after the seal, before the claim). */
const sealOfBody = async (body: string): Promise<SealedIntent | undefined> => {
  const due = await ledger.listDue(Number.MAX_SAFE_INTEGER, { limit: 100 });
  const parsed = parseIntent(body, { purposes, clock: { now: () => Date.now() }, allowExpired: true });
  if (!parsed.ok) return undefined;
  const pks = new Set(parsed.value.intent.channels.map((ch) => keyOf(body, ch).pk));
  return due.items.find((seal) => seal.rows.some((r) => pks.has(r.dedupeKey)));
};

afterAll(async () => {
  await sim?.stop();
  if (worker) rmSync(dirname(worker), { recursive: true, force: true });
});

/** What the crashed channel's row looked like between the crash and the replay, per edge. */
const EXPECTED_AFTER_CRASH: Partial<Record<DispatchEdge, { state?: string; accepted: number }>> = {
  before_claim: { accepted: 0 },
  // The claim is written directly as a leased `dispatching` row (the read-only gates ran before it).
  after_claim: { state: 'dispatching', accepted: 0 },
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
    expect(cases.filter((c) => c.group === 'edge').map((c) => c.name)).toEqual(names);
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
        expect(firstDispatch).toBeGreaterThanOrEqual(0);
        // Never claimable again once dispatching was recorded: no `claimed` after it.
        expect(states.slice(firstDispatch)).not.toContain('claimed');
        if (c.edge === 'after_claim' || c.edge === 'after_dispatching' || c.edge === 'after_provider') {
          // The dead worker's dispatching lease became a visible unknown before the replay under the same key.
          expect(row!.history.some((h) => h.s === 'unknown' && h.why === 'dispatching_lease_expired')).toBe(
            true,
          );
          expect(report.rounds[0]?.disposition).toBe('retry_later');
        }
        if (c.edge === 'after_provider') expect(row!.history.at(-1)?.why).toBe('provider_replayed_original');
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
    expect(longLease.row?.state).toBe('dispatching');
    expect(longLease.row?.leaseOwner).toBe('dispatch:crash-long');
    expect(longLease.row!.leaseUntil! - longLease.row!.history[0]!.at).toBe(120_000);
  });
});

const namesOf = (group: Group) => cases.filter((c) => c.group === group).map((c) => c.name);
const caseNamed = (name: string) => cases.find((x) => x.name === name)!;
const states = (row: DeliveryRecord | undefined) => row?.history.map((h) => h.s) ?? [];
const GATE_NAMES = [
  'after_gate (expired) × email × single',
  'after_gate (expired) × sms × single',
  'after_gate (suppressed) × email × single',
  'after_gate (suppressed) × sms × single',
  'after_gate (blocked: attachment checksum) × email × fallback',
];
const RETRY_NAMES = (['after_outcome', 'after_wait'] as const).flatMap((edge) =>
  (['email', 'sms'] as const).map(
    (channel) => `retry_wait ${edge} (429, Retry-After ${RETRY_AFTER_S} s) × ${channel} × single`,
  ),
);
const REPLAY_NAMES = [
  'replay after_dispatching × email (first: accept_then_drop)',
  'replay after_provider × email (first: accept_then_drop)',
  'replay after_dispatching × sms (first: status_500)',
  'replay after_provider × sms (first: status_500)',
  'replay after_outcome (429 on the replay) × email (first: accept_then_drop)',
];
const LAST_NAMES = [
  ...(['after_seal', 'after_claim', 'after_dispatching'] as const).flatMap((edge) =>
    (['email', 'sms'] as const).map((channel) => `last receive ${edge} × ${channel} × single`),
  ),
  'last receive after_dispatching × email × fallback',
];

describe('crash matrix: gate outcomes (a gate wrote its final state, then SIGKILL at after_gate)', () => {
  it('covers expired (email, SMS), suppressed (email, SMS) and a blocked attachment (fallback email)', () => {
    // Assess
    expect(namesOf('gate')).toEqual(GATE_NAMES);
  });

  it.each(GATE_NAMES)(
    '%s: the final state stands, the replay writes nothing and nothing reaches the provider',
    async (name) => {
      // Prepare
      const c = caseNamed(name);
      const report = replays.get(name)!;
      const crashed = afterCrash.get(name);
      const row = await ledger.get(c.target.pk, true);
      // Assess: the refusal was durable before the process died
      expect(crashes.get(name)).toMatchObject({ signal: 'SIGKILL' });
      expect(crashed?.state).toBe(c.gate!);
      // Written once, directly in the gate's state: the gates run before the claim.
      expect(states(crashed)).toEqual([c.gate!]);
      // Assess: the redelivery found a final row and left it exactly as it was
      expect(report.error).toBeUndefined();
      expect(report.rounds).toHaveLength(1);
      expect(report.rounds[0]).toMatchObject({
        disposition: 'done',
        channels: [{ channel: c.channel, state: c.gate!, action: 'already_final' }],
      });
      expect(row?.version).toBe(crashed?.version);
      expect(requestsFor(c.target.hash)).toEqual([]);
      if (c.other) {
        // A blocked email is a refusal for a human, not a definitive failure: no SMS was ever created.
        expect(await ledger.get(c.other.pk, true)).toBeUndefined();
        expect(requestsFor(c.other.hash)).toEqual([]);
      }
    },
  );
});

describe('crash matrix: retry_wait (a 429 whose Retry-After exceeds the inline budget)', () => {
  it('covers after_outcome (retry_wait written, nothing sealed yet) and after_wait (sealed) on both channels', () => {
    // Assess
    expect(namesOf('retry_wait')).toEqual(RETRY_NAMES);
  });

  it.each(RETRY_NAMES)(
    '%s: the Retry-After is honoured, then the message is sent once under the same key',
    async (name) => {
      // Prepare
      const c = caseNamed(name);
      const report = replays.get(name)!;
      const crashed = afterCrash.get(name)!;
      const seal = sealAfterCrash.get(name);
      const row = await ledger.get(c.target.pk, true);
      const firstDispatch = crashed.history.find((h) => h.s === 'dispatching')!.at;
      // Assess: the process died with the row waiting for the provider's Retry-After
      expect(crashed.state).toBe('retry_wait');
      expect(crashed.nextAttemptAt! - firstDispatch).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1000);
      if (c.edge === 'after_outcome') expect(seal).toBeUndefined();
      else {
        // The wait was parked: sealed, due a grace period after the retry is due.
        expect(seal).toMatchObject({ reason: 'retry_wait' });
        expect(seal!.dueAt).toBeGreaterThan(crashed.nextAttemptAt!);
      }
      // Assess: no request before the Retry-After, then exactly one acceptance
      expect(report.error).toBeUndefined();
      expect(report.rounds.at(-1)?.disposition).toBe('done');
      // The redelivery came while the Retry-After ran: it was sent back to wait, due at nextAttemptAt.
      expect(report.rounds.map((r) => r.disposition)).toEqual(['retry_later', 'done']);
      const early = report.rounds[0]!;
      expect(early.at).toBeLessThan(crashed.nextAttemptAt!);
      expect(early.visibleAfterMs).toBeGreaterThan(0);
      expect(early.visibleAfterMs).toBeLessThanOrEqual(crashed.nextAttemptAt! - early.at);
      expect(report.rounds[1]!.at).toBeGreaterThanOrEqual(crashed.nextAttemptAt! - 5);
      expect(row?.state).toBe('accepted');
      expect(states(row)).toEqual(['dispatching', 'retry_wait', 'dispatching', 'accepted']);
      expect(row!.history[2]!.at).toBeGreaterThanOrEqual(crashed.nextAttemptAt!);
      expect(row!.attempts).toBe(2);
      expect(requestsFor(c.target.hash).map((r) => r.outcome)).toEqual(['throttled', 'accepted']);
      expect(acceptances(c.target.hash)).toBe(1);
    },
  );
});

describe('crash matrix: a replay of an unknown row under an enforced key dies', () => {
  it('covers after_dispatching and after_provider on both channels, and after_outcome of a replay answered 429', () => {
    // Assess
    expect(namesOf('replay')).toEqual(REPLAY_NAMES);
  });

  it.each(REPLAY_NAMES)(
    '%s: the row ends accepted with one stored message, no attempt spent and never rejected',
    async (name) => {
      // Prepare
      const c = caseNamed(name);
      const report = replays.get(name)!;
      const crashed = afterCrash.get(name)!;
      const row = await ledger.get(c.target.pk, true);
      // Assess: the crash hit the replay, not the first attempt
      expect(crashed.history.some((h) => h.s === 'unknown')).toBe(true);
      expect(crashed.attempts).toBe(1);
      if (c.edge === 'after_outcome') {
        // The replay's 429 is evidence, not an outcome: back to unknown, no attempt, no rejection.
        expect(crashed.state).toBe('unknown');
        expect(crashed.history.at(-1)?.why).toMatch(/^replay_answer:retryable:/);
      } else {
        expect(crashed.state).toBe('dispatching');
        expect(states(crashed).slice(-2)).toEqual(['unknown', 'dispatching']);
      }
      const storedAtCrash = c.first === 'accept_then_drop' || c.edge === 'after_provider' ? 1 : 0;
      expect(storedBeforeReplay.get(name)).toBe(storedAtCrash);
      // Assess: settled through the same key; the provider holds one message for it, ever
      expect(report.error).toBeUndefined();
      expect(report.rounds.at(-1)?.disposition).toBe('done');
      expect(row?.state).toBe('accepted');
      expect(stored(c.target.hash)).toBe(1);
      expect(row!.attempts).toBe(1);
      expect(states(row)).not.toContain('rejected');
      expect(row!.history.at(-1)?.why).toBe(
        storedAtCrash ? 'provider_replayed_original' : 'provider_accepted',
      );
      if (c.edge !== 'after_outcome')
        expect(row!.history.filter((h) => h.why === 'dispatching_lease_expired')).toHaveLength(1);
    },
  );
});

describe('crash matrix: the last receive (maxReceiveCount from the queue definition), recovered by the sweep', () => {
  it(`covers after_seal, after_claim and after_dispatching on receive ${INTAKE_QUEUE.maxReceiveCount} of ${INTAKE_QUEUE.maxReceiveCount}`, () => {
    // Assess
    expect(namesOf('last_receive')).toEqual(LAST_NAMES);
    for (const name of LAST_NAMES) expect(replays.has(name), name).toBe(false);
  });

  it.each(LAST_NAMES)(
    '%s: sealed before the claim; the sweep resumes it and it is sent exactly once',
    async (name) => {
      // Prepare
      const c = caseNamed(name);
      const crashed = afterCrash.get(name);
      const seal = sealAfterCrash.get(name);
      const row = await ledger.get(c.target.pk, true);
      // Assess: the intent was in the ledger before anything else happened
      expect(crashes.get(name)).toMatchObject({ signal: 'SIGKILL' });
      expect(seal).toMatchObject({ reason: c.mode === 'fallback' ? 'fallback' : 'last_receive' });
      expect(seal!.ciphertext).not.toContain('@example.com');
      expect(crashed?.state).toBe(c.edge === 'after_seal' ? undefined : 'dispatching');
      // Assess: nobody else had the message; without the sweep the row would stay where it died
      expect(afterReplay.get(name)?.state).toBe(crashed?.state);
      // Assess: the sweep made it visible and resumed it; one acceptance, never left dispatching
      expect(row?.state).toBe('accepted');
      expect(acceptances(c.target.hash)).toBe(1);
      expect(stored(c.target.hash)).toBe(1);
      if (c.edge === 'after_claim' || c.edge === 'after_dispatching') {
        const marked = row!.history.find((h) => h.s === 'unknown');
        expect(marked).toMatchObject({ why: 'dispatching_lease_expired' });
        expect(marked!.by).toMatch(/^sweep:/);
        expect(states(row).slice(-3)).toEqual(['unknown', 'dispatching', 'accepted']);
      }
      expect(row!.history.at(-1)?.by).toBe('dispatch:resumed');
      if (c.other) expect(await ledger.get(c.other.pk, true)).toBeUndefined();
    },
  );

  it('the sweep released every seal once its notification was final, and left no row dispatching or claimed', () => {
    // Assess
    expect(sweeps.reduce((n, s) => n + s.resumed, 0)).toBeGreaterThanOrEqual(LAST_NAMES.length);
    expect(sweeps.reduce((n, s) => n + s.markedUnknown, 0)).toBeGreaterThanOrEqual(3);
    expect(sweeps.reduce((n, s) => n + s.stalled, 0)).toBe(0);
    expect(sealsLeft).toEqual([]);
    expect(sweepRowsLeft.map((r) => `${r.pk}: ${r.state}`)).toEqual([]);
  });
});
