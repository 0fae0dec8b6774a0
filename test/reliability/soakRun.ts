import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, cpSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { exportBundle, verifyBundle } from '../../lib/archive/bundle.js';
import { DuckDbAudit } from '../../lib/archive/DuckDbAudit.js';
import { createDigests, ensureLocalDigestKey, localSigner } from '../../lib/archive/digest.js';
import { DirStore } from '../../lib/archive/store.js';
import { dynamoDocumentClient, sqsClient } from '../../lib/aws/clients.js';
import { ENV, functionConfig, loadConfig } from '../../lib/config.js';
import { Dispatcher } from '../../lib/dispatch/Dispatcher.js';
import { createRuntime } from '../../lib/dispatchRuntime.js';
import { systemClock } from '../../lib/domain/clock.js';
import { countryLabel, countryOf } from '../../lib/domain/countryRules.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { DEFINITIVE_FAILURES, type DeliveryState, isTerminal } from '../../lib/domain/states.js';
import { DynamoEvidenceStore } from '../../lib/evidence/DynamoEvidenceStore.js';
import { evidenceRecorderFor, pullEvidenceFor } from '../../lib/evidenceWiring.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { DynamoSuppressionList } from '../../lib/ledger/DynamoSuppressionList.js';
import type { DeliveryRecord } from '../../lib/ledger/port.js';
import { type RunningLocalStack, startLocalStack } from '../../lib/local/LocalStack.js';
import { queueDepth } from '../../lib/local/queues.js';
import { publishIntents } from '../../lib/publish/publishIntents.js';
import { SpendBreaker } from '../../lib/rate/SpendBreaker.js';
import { Reconciler } from '../../lib/reconcile/Reconciler.js';
import type { ActiveFault } from '../../lib/simulator/faults.js';
import { DEFAULT_TEMPLATES_DIR } from '../../lib/templates/FileTemplateStore.js';
import { createTransports } from '../../lib/transports/index.js';
import { type SecretScanResult, scanForSecrets } from './secretScan.js';
import type { SoakCrashMessage } from './soakCrashWorker.js';
import {
  GONE_TEMPLATE,
  LAST_RECEIVE_EDGES,
  type LastReceiveEdge,
  type PlannedIntent,
  planSoak,
  SOAK_FAULT_KINDS,
  SOAK_GUARDED_PURPOSE,
  type SoakFaultKind,
  type SoakPlan,
} from './soakPlan.js';

/**
 * The fault-load run. One local stack on loopback (DynamoDB Local, fauxqs, the provider simulator for
 * both channels), the functions worker's two pollers plus `extraWorkers` more dispatcher processes on the
 * same queue, a deterministic plan of intents, duplicates and faults, then: wait until the queue is empty
 * and every row has settled, run the reconciler until it changes nothing, and check the claim from three
 * independent sources — the ledger (scan), the simulator's request log, and the archive (DuckDB).
 */
export interface SoakOptions {
  intents: number;
  faultRate: number;
  duplicateRate: number;
  seed: number;
  extraWorkers: number;
  /** Share of intents handed on their last receive to a dispatcher that is SIGKILLed (default 0). */
  lastReceiveRate?: number;
  /** Share of intents whose first request meets a 429 with `longRetryAfterSeconds` (default 0). */
  longRetryRate?: number;
  longRetryAfterSeconds?: number;
  /** Share of intents added as scheduled receipts whose template revision is removed before sendAt (default 0). */
  templateGoneRate?: number;
  /** Share of intents added as resets whose bounce is read before the `accepted` write (default 0). */
  earlyBounceRate?: number;
  /** Share of intents added as breaker-guarded SMS published `stormCopies` times each (default 0). */
  stormRate?: number;
  stormCopies?: number;
  /** The whole run (after start-up) must finish within this; a timeout is a violation, not a hang. */
  timeoutSeconds: number;
  stateDir?: string;
  keepState?: boolean;
  progress?: (line: string) => void;
}

export interface WaitingRow {
  dedupeKey: string;
  state: DeliveryState;
  ageSeconds: number;
  why?: string;
}

export interface SoakReport {
  options: Omit<SoakOptions, 'progress'>;
  figures: {
    intents: number;
    published: number;
    duplicatePublishes: number;
    channelsExpected: number;
    faultsPlanned: Record<SoakFaultKind, number>;
    faultsInjected: Record<SoakFaultKind, number>;
    providerRequests: number;
    providerAcceptances: number;
    providerReplays: number;
    /** Requests whose answer the simulator dropped (before or after accepting). */
    providerAnswersLost: number;
    /** Dedupe keys with more than one provider acceptance. Must be 0. */
    duplicatesFound: number;
    /** Intents missing a row for an expected channel, or with a row not terminal and not explicitly waiting. Must be 0. */
    lost: number;
    rowsByState: Record<string, number>;
    /**
     * Non-terminal rows with no seal and no live lease at the end: nothing in the ledger would ever
     * revisit them. Must be 0.
     */
    stranded: number;
    /** Rows the sweep moved to `stalled` (it could not resume them). Must be 0. */
    stalled: number;
    /** Sealed notifications still in the ledger at the end (an accepted fallback keeps its seal for bounces). */
    sealsLeft: number;
    /** Intents handed on their last receive to a dispatcher killed at the edge; the sweep must finish them. */
    lastReceive: {
      planned: number;
      killed: number;
      recovered: number;
      byEdge: Record<LastReceiveEdge, number>;
    };
    /** 429s with a Retry-After beyond the inline budget: sent once, and never before the Retry-After. */
    longRetryAfter: { seconds: number; planned: number; honoured: number };
    /**
     * Scheduled receipts whose template revision was removed before sendAt: each must end `blocked` or
     * `stalled` with the reason (never left `scheduled`), with no provider request.
     */
    templateGone: { planned: number; blocked: number; stalled: number; reasons: Record<string, number> };
    /**
     * Resets whose permanent bounce the provider's feed gave the reconciler before the dispatcher heard
     * `accepted` (the simulator held the answer until the bounce was read): each must end bounced with
     * the recipient suppressed.
     */
    earlyBounce: {
      planned: number;
      /** The simulator answered only after the bounce had been read from its feed. */
      readBeforeAnswer: number;
      /** The bounce was recorded (evidence item) before the row's `accepted` write. */
      recordedBeforeAccepted: number;
      bounced: number;
      suppressed: number;
    };
    /**
     * A duplicate storm on the breaker-guarded purpose: `messages` SMS, each published `copies` times;
     * the breaker allows exactly `messages`. Each must be accepted once and the breaker count only the
     * real sends, never open.
     */
    storm: {
      messages: number;
      copies: number;
      accepted: number;
      breakerSends: number;
      breakerState: string;
      blockedByBreaker: number;
    };
    unknown: number;
    quarantined: number;
    /** Rows that went through `unknown` and how they left it: a replay under the same key, a provider lookup. */
    unknownRecovered: { byReplay: number; byLookup: number; other: number };
    /** Rows that waited in `retry_wait` (429, connection refused) before their next attempt. */
    retried: number;
    reconcilePasses: number;
    reconcileResolved: number;
    reconcileQuarantined: number;
    ledgerTransitions: number;
    archiveTransitions: number;
    deadLetters: number;
    secretsFound: number;
    secretScan: SecretScanResult['scanned'];
    startupSeconds: number;
    /** From the first publish until the queue was empty and every row settled (the dispatch phase). */
    settledSeconds: number;
    durationSeconds: number;
    intentsPerSecond: number;
  };
  waiting: WaitingRow[];
  /** Every faulted row's journey: which fault, then the states it went through. */
  faulted: Array<{
    fault: SoakFaultKind | `last_receive:${LastReceiveEdge}`;
    dedupeKey: string;
    path: string;
  }>;
  violations: string[];
}

const SOAK_WORKER = fileURLToPath(new URL('./soakWorker.ts', import.meta.url));
const SOAK_CRASH_WORKER = fileURLToPath(new URL('./soakCrashWorker.ts', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const emptyByKind = (): Record<SoakFaultKind, number> =>
  Object.fromEntries(SOAK_FAULT_KINDS.map((k) => [k, 0])) as Record<SoakFaultKind, number>;
/** Rows a run may end in: final, or explicitly waiting for evidence or a human. */
const WAITING: readonly DeliveryState[] = ['unknown', 'quarantined'];
const settled = (state: DeliveryState) => isTerminal(state) || WAITING.includes(state);
/** A row the run waits no longer for: settled, or `stalled` (it waits for a human; a violation if unplanned). */
const quiet = (state: DeliveryState) => settled(state) || state === 'stalled';
/** How far ahead of its claim a template-gone receipt is scheduled: the revision is removed meanwhile. */
const TEMPLATE_GONE_LEAD_MS = 15_000;
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Claims the template-gone receipts `scheduled` a few seconds ahead with a dispatcher in this process
 * (built as the dispatch function is, from the stack's settings), so the stack's own dispatchers never
 * load the revision; then removes the revision from the stack's templates before any sendAt. At sendAt
 * the sweep resumes them and the stack's dispatchers cannot render them.
 */
const scheduleTemplateGone = async (
  stack: RunningLocalStack,
  plan: SoakPlan,
  templatesDir: string,
  violations: string[],
): Promise<void> => {
  if (plan.templateGone.length === 0) return;
  const config = functionConfig('dispatch', { ...process.env, ...stack.env });
  const dispatcher = new Dispatcher({
    ...(await createRuntime(config)),
    clock: systemClock,
    workerId: 'dispatch:soak-schedule',
    leaseMs: config.leaseSeconds * 1000,
    logger: silent,
  });
  const sendAt = Date.now() + TEMPLATE_GONE_LEAD_MS;
  for (const [n, index] of plan.templateGone.entries()) {
    const intent = { ...plan.intents[index]!.intent, sendAt: new Date(sendAt).toISOString() };
    const out = await dispatcher.handle(JSON.stringify(intent), {
      messageId: `soak-tg-${n}`,
      receiveCount: 1,
    });
    if (out.channels[0]?.state !== 'scheduled')
      violations.push(
        `template-gone receipt ${intent.eventId} was not scheduled: ${out.channels[0]?.state ?? out.disposition}`,
      );
  }
  rmSync(join(templatesDir, GONE_TEMPLATE.id, GONE_TEMPLATE.revision), { recursive: true });
  if (Date.now() >= sendAt)
    violations.push(
      'the template revision was removed after the receipts were due: raise TEMPLATE_GONE_LEAD_MS',
    );
};

const scanLedger = async (stack: RunningLocalStack): Promise<DeliveryRecord[]> => {
  const doc = dynamoDocumentClient({ region: stack.state.region, endpoint: stack.state.dynamodb });
  const rows: DeliveryRecord[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({ TableName: stack.state.ledgerTable, ExclusiveStartKey: start, ConsistentRead: true }),
    );
    rows.push(...((page.Items ?? []) as DeliveryRecord[]));
    start = page.LastEvaluatedKey;
  } while (start);
  // Fallback pointers share the table but are not deliveries (no state, no history); nor are the spend
  // breaker's items (a state and a history of their own).
  return rows.filter(
    (r) => typeof r.state === 'string' && Array.isArray(r.history) && (r.kind as string) !== 'breaker',
  );
};

const startExtraWorker = async (stack: RunningLocalStack): Promise<ChildProcess> => {
  const fd = openSync(stack.state.functionsLog, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', SOAK_WORKER], {
    // The child reads its settings through lib/config.ts from this environment, as the functions worker does.
    env: { ...process.env, ...stack.env },
    stdio: ['ignore', fd, fd, 'ipc'],
  });
  closeSync(fd);
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error('soak worker did not start in 60 s')), 60_000);
    child.once('message', () => {
      clearTimeout(timer);
      ready();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`soak worker exited with ${code} during start-up`));
    });
  });
  return child;
};

const stopChild = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
};

/**
 * The last-receive crashes: one dispatcher process takes every planned intent on its last receive, each
 * dispatch stops at its edge, then the process is SIGKILLed. The messages then go where SQS's redrive
 * puts a message whose receives are spent: the DLQ. Returns how many dispatches were stopped and killed.
 */
const crashLastReceives = async (
  stack: RunningLocalStack,
  plan: SoakPlan,
  violations: string[],
): Promise<number> => {
  if (plan.lastReceive.length === 0) return 0;
  const crashes = plan.lastReceive.map(({ index, edge }) => {
    const planned = plan.intents[index]!;
    return {
      body: JSON.stringify(planned.intent),
      dedupeKey: planned.keys[planned.channels[0]!]!.pk,
      edge,
    };
  });
  const fd = openSync(stack.state.functionsLog, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', SOAK_CRASH_WORKER, JSON.stringify({ crashes })], {
    env: { ...process.env, ...stack.env },
    stdio: ['ignore', fd, fd, 'ipc'],
  });
  closeSync(fd);
  const stopped = new Set<string>();
  const exited = new Promise<NodeJS.Signals | number | null>((r) =>
    child.once('exit', (code, signal) => r(signal ?? code)),
  );
  const allStopped = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 120_000);
    child.on('message', (message: SoakCrashMessage | { finished: string }) => {
      if ('finished' in message)
        violations.push(`last-receive dispatch ran past its edge: ${message.finished}`);
      else stopped.add(message.stopped);
      if (stopped.size === crashes.length) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      resolve(stopped.size === crashes.length);
    });
  });
  if (!(await allStopped))
    violations.push(
      `last-receive crashes: ${stopped.size} of ${crashes.length} dispatches reached their edge`,
    );
  child.kill('SIGKILL');
  const how = await exited;
  if (how !== 'SIGKILL')
    violations.push(`the last-receive dispatcher ended with ${String(how)}, not SIGKILL`);
  const sqs = sqsClient({ region: stack.state.region, endpoint: stack.state.sqs });
  for (const crash of crashes)
    await sqs.send(new SendMessageCommand({ QueueUrl: stack.state.dlqUrl, MessageBody: crash.body }));
  return how === 'SIGKILL' ? stopped.size : 0;
};

/** Seal items (`seal#…`) left in the ledger. */
const sealKeys = async (stack: RunningLocalStack): Promise<Set<string>> => {
  const doc = dynamoDocumentClient({ region: stack.state.region, endpoint: stack.state.dynamodb });
  const keys = new Set<string>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({
        TableName: stack.state.ledgerTable,
        ExclusiveStartKey: start,
        ConsistentRead: true,
        FilterExpression: '#kind = :seal',
        ExpressionAttributeNames: { '#kind': 'kind' },
        ExpressionAttributeValues: { ':seal': 'seal' },
        ProjectionExpression: 'logicalKey',
      }),
    );
    for (const item of page.Items ?? []) keys.add(String(item.logicalKey));
    start = page.LastEvaluatedKey;
  } while (start);
  return keys;
};

/**
 * With early bounces planned, a second reader of the provider's pull feed in this process, every 300 ms
 * (the same recorder and the same durable cursor as the reconciler's; two readers are allowed, each event
 * is recorded once): the reconciler reads the feed once per run, and a run under the soak's load can
 * outlast the provider's held answer, so without it a bounce would seldom beat the `accepted` write.
 */
const readFeedOften = (stack: RunningLocalStack, plan: SoakPlan): { stop(): Promise<void> } => {
  if (plan.earlyBounces.length === 0) return { stop: async () => undefined };
  const config = loadConfig({ ...process.env, ...stack.env });
  const recorder = evidenceRecorderFor(config, { clock: systemClock, logger: silent });
  const pull = pullEvidenceFor(config, recorder, { now: () => Date.now(), logger: silent });
  let reading = true;
  const loop = (async () => {
    while (reading && pull) {
      await pull.poll().catch(() => undefined);
      await sleep(300);
    }
  })();
  return {
    stop: async () => {
      reading = false;
      await loop;
    },
  };
};

export const runSoak = async (options: SoakOptions): Promise<SoakReport> => {
  const progress = options.progress ?? (() => undefined);
  const violations: string[] = [];
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), 'sendproof-soak-'));
  const bootStarted = Date.now();
  const plan = planSoak({
    intents: options.intents,
    faultRate: options.faultRate,
    duplicateRate: options.duplicateRate,
    seed: options.seed,
    lastReceiveRate: options.lastReceiveRate ?? 0,
    longRetryRate: options.longRetryRate ?? 0,
    longRetryAfterSeconds: options.longRetryAfterSeconds ?? 45,
    templateGoneRate: options.templateGoneRate ?? 0,
    earlyBounceRate: options.earlyBounceRate ?? 0,
    stormRate: options.stormRate ?? 0,
    ...(options.stormCopies !== undefined ? { stormCopies: options.stormCopies } : {}),
    workDir: stateDir,
    now: Date.now(),
  });
  // The stack renders from its own copy of the templates (one revision of it disappears mid-run) and
  // knows the breaker-guarded purpose.
  const templatesDir = join(stateDir, 'templates');
  cpSync(DEFAULT_TEMPLATES_DIR, templatesDir, { recursive: true });
  const stack = await startLocalStack({
    stateDir,
    emailTransport: 'simulator',
    progress,
    env: {
      [ENV.templatesDir]: templatesDir,
      ...(plan.purposes.length ? { [ENV.purposes]: JSON.stringify(plan.purposes) } : {}),
    },
  });
  const workers: ChildProcess[] = [];
  try {
    for (let i = 0; i < options.extraWorkers; i += 1) {
      progress(`starting extra dispatcher process ${i + 1}…`);
      workers.push(await startExtraWorker(stack));
    }
    const startupSeconds = (Date.now() - bootStarted) / 1000;
    const started = Date.now();
    const deadline = started + options.timeoutSeconds * 1000;
    const { state } = stack;
    const faults: Array<{ kind: SoakFaultKind; active: ActiveFault }> = plan.faults.map((f) => ({
      kind: f.kind,
      active: stack.simulator.addFault(f.spec),
    }));
    const faultsPlanned = emptyByKind();
    for (const f of plan.faults) faultsPlanned[f.kind] += 1;
    progress(
      `plan: ${plan.intents.length} intents, ${plan.duplicates} duplicate publishes, ${plan.faults.length} faults, ${plan.lastReceive.length} last-receive crashes, ${plan.templateGone.length} template-gone receipts, ${plan.earlyBounces.length} early bounces, a storm of ${plan.storm.indexes.length} × ${plan.storm.copies} (seed ${options.seed})`,
    );
    await scheduleTemplateGone(stack, plan, templatesDir, violations);
    const feedReader = readFeedOften(stack, plan);
    // The last-receive crashes run while the rest is published and consumed.
    const crashed = crashLastReceives(stack, plan, violations);

    // Act: publish everything (batches of 10, validated), while the workers already consume.
    const sqs = sqsClient({ region: state.region, endpoint: state.sqs });
    const bodies = plan.publishOrder.map((i) => plan.intents[i]!.intent);
    let lastLine = 0;
    const published = await publishIntents(sqs, state.queueUrl, bodies, {
      purposes: PurposeRegistry.withOverrides(plan.purposes),
      onProgress: (done, total) => {
        if (Date.now() - lastLine > 2_000 || done === total) {
          lastLine = Date.now();
          progress(`published ${done}/${total}`);
        }
      },
    });
    const refused = published.filter((p) => !p.ok);
    if (refused.length) violations.push(`${refused.length} intents were refused at publish`);
    const killed = await crashed;
    progress(`last-receive crashes: ${killed} dispatches killed at their edge`);
    const expectedRows = plan.intents.flatMap((p) =>
      (p.delivery === 'all' ? p.channels : [p.channels[0]!]).map((c) => p.keys[c]!.pk),
    );

    // Wait: queue empty and every row settled, twice in a row (a parked message may still be invisible).
    let quietPolls = 0;
    let rows: DeliveryRecord[] = [];
    while (Date.now() < deadline) {
      await sleep(2_000);
      const depth = await queueDepth(sqs, state.queueUrl);
      const requests = stack.simulator.requests().length;
      if (depth > 0) {
        quietPolls = 0;
        progress(
          `t+${Math.round((Date.now() - started) / 1000)}s queue ${depth}, provider requests ${requests}`,
        );
        continue;
      }
      rows = await scanLedger(stack);
      const open = rows.filter((r) => !quiet(r.state)).length;
      // A notification sealed on its last receive may have no row yet: only the sweep will create it.
      const present = new Set(rows.map((r) => r.pk));
      const missing = expectedRows.filter((pk) => !present.has(pk)).length;
      progress(
        `t+${Math.round((Date.now() - started) / 1000)}s queue empty, ${rows.length} rows, ${open} not settled, ${missing} not yet claimed`,
      );
      quietPolls = open === 0 && missing === 0 ? quietPolls + 1 : 0;
      if (quietPolls >= 2) break;
    }
    const settledSeconds = (Date.now() - started) / 1000;
    await feedReader.stop();
    if (quietPolls < 2) violations.push(`not quiescent within ${options.timeoutSeconds} s`);

    // Reconcile until a pass changes nothing, with the same adapters the deployed reconciler would use.
    const config = loadConfig(stack.env);
    const ledger = new DynamoLedger(
      dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb }),
      state.ledgerTable,
    );
    let reconcilePasses = 0;
    let reconcileResolved = 0;
    let reconcileQuarantined = 0;
    for (; reconcilePasses < 10; ) {
      const summary = await new Reconciler({
        ledger,
        transports: createTransports(config),
        purposes: PurposeRegistry.withOverrides(plan.purposes),
        clock: systemClock,
        runId: `soak-${reconcilePasses + 1}`,
      }).runAll();
      reconcilePasses += 1;
      reconcileResolved += summary.resolved;
      reconcileQuarantined += summary.quarantined;
      progress(
        `reconcile pass ${reconcilePasses}: ${summary.processed} unknown rows, ${summary.resolved} resolved, ${summary.quarantined} quarantined, ${summary.left} left`,
      );
      if (summary.resolved === 0 && summary.quarantined === 0) break;
    }
    rows = await scanLedger(stack);
    const byPk = new Map(rows.map((r) => [r.pk, r]));

    // Check 1: nothing lost. Every intent has a settled row per expected channel.
    let lost = 0;
    let channelsExpected = 0;
    const lose = (p: PlannedIntent, why: string) => {
      lost += 1;
      if (lost <= 20) violations.push(`lost: intent ${p.intent.eventId} (${p.kind}): ${why}`);
    };
    for (const p of plan.intents) {
      const expected = p.delivery === 'all' ? p.channels : [p.channels[0]!];
      channelsExpected += expected.length;
      const missing = expected.filter((c) => !byPk.has(p.keys[c]!.pk));
      if (missing.length) {
        lose(p, `no row for ${missing.join(', ')}`);
        continue;
      }
      const open = expected
        .map((c) => byPk.get(p.keys[c]!.pk)!)
        .filter((r) => !settled(r.state) && !(p.kind === 'receipt_template_gone' && r.state === 'stalled'));
      if (open.length) {
        lose(p, open.map((r) => `${r.channel} is ${r.state}`).join(', '));
        continue;
      }
      if (p.delivery === 'fallback') {
        // A definitively failed first channel must have led to the next one.
        const first = byPk.get(p.keys[p.channels[0]!]!.pk)!;
        const next = p.keys[p.channels[1]!]!;
        if (DEFINITIVE_FAILURES.includes(first.state)) {
          channelsExpected += 1;
          const second = byPk.get(next.pk);
          if (!second || !settled(second.state))
            lose(p, `email ${first.state} but sms ${second ? second.state : 'never claimed'}`);
        } else if (WAITING.includes(first.state) && byPk.has(next.pk)) {
          violations.push(`fallback ${p.intent.eventId}: sms claimed while email is ${first.state}`);
        }
      }
    }
    if (lost > 20) violations.push(`… and ${lost - 20} more lost intents`);

    // Check 2: at most one provider acceptance per logical message (per idempotency key).
    const requests = stack.simulator.requests();
    // An acceptance is a message the provider stored: an `accepted` answer, or an `accept_then_drop`
    // whose answer was lost on the wire (logged as `dropped` with a message id). A `replayed` answer
    // returns the original message and is not a second acceptance. The simulator's message store is a
    // second, independent count of the same thing.
    const acceptances = new Map<string, number>();
    for (const r of requests)
      if (r.idempotencyKey && (r.outcome === 'accepted' || (r.outcome === 'dropped' && r.messageId)))
        acceptances.set(r.idempotencyKey, (acceptances.get(r.idempotencyKey) ?? 0) + 1);
    const stored = new Map<string, number>();
    for (const m of stack.simulator.messages())
      if (m.idempotencyKey) stored.set(m.idempotencyKey, (stored.get(m.idempotencyKey) ?? 0) + 1);
    for (const [key, n] of stored)
      if (acceptances.get(key) !== n)
        violations.push(
          `simulator store has ${n} messages for ${key}, its request log ${acceptances.get(key) ?? 0}`,
        );
    const duplicated = [...acceptances.entries()].filter(([, n]) => n > 1);
    for (const [key, n] of duplicated.slice(0, 20))
      violations.push(`duplicate: idempotency key ${key} accepted ${n} times`);
    // The ledger agrees with the provider: an `accepted` row was accepted by the provider exactly once,
    // and nothing the provider accepted is recorded as a failure.
    const byHash = new Map(rows.map((r) => [r.idempotencyKey, r]));
    for (const row of rows.filter((r) => r.state === 'accepted' && r.kind === 'delivery'))
      if (acceptances.get(row.idempotencyKey) !== 1)
        violations.push(
          `ledger says accepted, provider accepted ${acceptances.get(row.idempotencyKey) ?? 0}: ${row.pk} (${row.history.map((h) => `${h.s}${h.why ? `:${h.why}` : ''}`).join(' → ')})`,
        );
    for (const [hash] of acceptances) {
      const row = byHash.get(hash);
      if (!row || !['accepted', 'unknown', 'quarantined', 'resolved_accepted'].includes(row.state))
        violations.push(`provider accepted ${hash} but the ledger row is ${row?.state ?? 'missing'}`);
    }

    // Check 3: every unknown/quarantined row is visible with its age.
    const now = Date.now();
    const waiting: WaitingRow[] = rows
      .filter((r) => WAITING.includes(r.state))
      .map((r) => ({
        dedupeKey: r.pk,
        state: r.state,
        ageSeconds: Math.round((now - (r.attnAt ?? r.updatedAt)) / 1000),
        ...(r.history.at(-1)?.why ? { why: r.history.at(-1)!.why! } : {}),
      }));
    for (const w of waiting) {
      const attention = await ledger.listAttention(w.state, { limit: 1000 });
      if (!attention.items.some((i) => i.pk === w.dedupeKey))
        violations.push(`${w.state} row not in the attention index: ${w.dedupeKey}`);
    }

    // Check 4: the archive holds every ledger transition exactly once (waiting for the archiver, bounded).
    const ledgerTransitions = rows.reduce((n, r) => n + r.history.length, 0);
    let archiveTransitions = 0;
    let archiveDistinct = 0;
    const archiveDeadline = Math.max(deadline, Date.now() + 30_000) + 60_000;
    do {
      const audit = await DuckDbAudit.open(state.archiveDir);
      try {
        const out = await audit.query(
          // Counted once each, by the identity the named queries dedupe on: a regrouped stream retry may
          // store a transition twice (two batch keys), which is allowed as long as nothing is missing.
          "SELECT count(*) AS n, count(DISTINCT dedupe_key || '#' || CAST(version AS VARCHAR) || '#' || CAST(transition_at_ms AS VARCHAR)) AS d FROM transitions WHERE to_state NOT LIKE 'delivery:%'",
        );
        archiveTransitions = Number(out.rows[0]?.d ?? 0);
        archiveDistinct = Number(out.rows[0]?.n ?? 0);
      } finally {
        audit.close();
      }
      if (archiveTransitions >= ledgerTransitions) break;
      progress(`archive ${archiveTransitions}/${ledgerTransitions} transitions`);
      await sleep(1_000);
    } while (Date.now() < archiveDeadline);
    if (archiveTransitions !== ledgerTransitions)
      violations.push(`archive has ${archiveTransitions} transitions, the ledger ${ledgerTransitions}`);
    if (archiveDistinct > archiveTransitions)
      progress(`archive stores ${archiveDistinct - archiveTransitions} transitions twice (counted once)`);

    // Check 5: no marker (secret, address, attachment bytes) anywhere Sendproof wrote.
    // Check 5a: digest the archive and export one notification's bundle for a regulator; it must verify
    // offline, and the secret scan reads it too.
    const bundleDir = join(state.archiveDir, '..', 'soak-bundle');
    const sample = rows.find((r) => r.history.some((h) => h.s === 'unknown')) ?? rows[0];
    if (sample) {
      const key = ensureLocalDigestKey(join(state.archiveDir, '..', 'keys'));
      const store = new DirStore(state.archiveDir);
      // The stack still runs: a late delivery fact can add an archive object after the digest. Such an
      // object is only not digested yet (the next digest covers it); anything else fails at once.
      let bundle: Awaited<ReturnType<typeof verifyBundle>>;
      for (let attempt = 1; ; attempt += 1) {
        await createDigests({ store, signer: localSigner(key.privateKeyPem, key.keyId) });
        rmSync(bundleDir, { recursive: true, force: true });
        await exportBundle({
          store,
          subject: sample.pk,
          tenant: sample.pk.split(':')[0]!,
          from: '2000-01-01',
          to: '2100-01-01',
          outDir: bundleDir,
          publicKeyPem: key.publicKeyPem,
        });
        bundle = await verifyBundle(bundleDir, key.publicKeyPem);
        const onlyUndigested =
          !bundle.ok &&
          bundle.added.length > 0 &&
          [
            bundle.missing,
            bundle.changed,
            bundle.badSignatures,
            bundle.chainBreaks,
            bundle.bundleProblems,
          ].every((list) => list.length === 0);
        if (!onlyUndigested || attempt === 3) break;
        progress(`archive objects written after the digest (${bundle.added.length}); digesting again`);
      }
      if (!bundle.ok)
        violations.push(`export bundle of ${sample.pk} does not verify: ${JSON.stringify(bundle)}`);
    }
    progress('scanning DynamoDB, logs, metrics, the archive and the export bundle for secrets…');
    const scan = await scanForSecrets(state, plan.markers, [], [bundleDir]);
    for (const hit of scan.hits.slice(0, 20)) violations.push(`secret: ${hit.marker} found in ${hit.where}`);

    const deadLetters = await queueDepth(sqs, state.dlqUrl);
    // Only the last-receive crashes' messages belong there (moved by the redrive, not by Sendproof).
    if (deadLetters !== killed) violations.push(`${deadLetters} dead letters, expected ${killed}`);
    const faultsInjected = emptyByKind();
    for (const f of faults) if (f.active.remaining === 0) faultsInjected[f.kind] += 1;
    const rowsByState: Record<string, number> = {};
    for (const r of rows) rowsByState[r.state] = (rowsByState[r.state] ?? 0) + 1;
    const unknownRecovered = { byReplay: 0, byLookup: 0, other: 0 };
    for (const r of rows) {
      const at = r.history.findIndex((h) => h.s === 'unknown');
      if (at < 0 || WAITING.includes(r.state)) continue;
      const next = r.history[at + 1];
      if (next?.s === 'dispatching') unknownRecovered.byReplay += 1;
      else if (next?.why?.startsWith('lookup:')) unknownRecovered.byLookup += 1;
      else unknownRecovered.other += 1;
    }
    const retried = rows.filter((r) => r.history.some((h) => h.s === 'retry_wait')).length;

    // Check 6: nothing stranded — every non-terminal row has a seal or a live lease, i.e. an owner.
    const seals = await sealKeys(stack);
    const endedAt = Date.now();
    const strandedRows = rows.filter(
      (r) =>
        !isTerminal(r.state) &&
        !seals.has(r.logicalKey) &&
        !((r.state === 'claimed' || r.state === 'dispatching') && (r.leaseUntil ?? 0) > endedAt),
    );
    for (const r of strandedRows.slice(0, 20))
      violations.push(`stranded: ${r.pk} is ${r.state} with no seal and no live lease`);
    const goneKeys = new Set(plan.templateGone.map((i) => plan.intents[i]!.keys.email!.pk));
    const stalledRows = rows.filter((r) => r.state === 'stalled' && !goneKeys.has(r.pk));
    for (const r of stalledRows.slice(0, 20))
      violations.push(`stalled: ${r.pk} (${r.history.at(-1)?.why ?? ''})`);

    // Check 7: every last-receive crash was finished by the sweep, exactly once.
    const byEdge = Object.fromEntries(LAST_RECEIVE_EDGES.map((e) => [e, 0])) as Record<
      LastReceiveEdge,
      number
    >;
    let recovered = 0;
    for (const { index, edge } of plan.lastReceive) {
      byEdge[edge] += 1;
      const planned = plan.intents[index]!;
      const key = planned.keys[planned.channels[0]!]!;
      const row = byPk.get(key.pk);
      if (row?.state === 'accepted' && acceptances.get(key.hash) === 1) recovered += 1;
      else
        violations.push(
          `last receive (${edge}) not finished: ${key.pk} is ${row?.state ?? 'missing'}, ${acceptances.get(key.hash) ?? 0} acceptances`,
        );
    }

    // Check 8: a long Retry-After was honoured: nothing sent before it, then exactly one acceptance.
    let honoured = 0;
    const longFaults = plan.faults.filter((f) => f.kind === 'status_429_long');
    for (const f of longFaults) {
      const key = plan.intents[f.index]!.keys[f.channel]!;
      const mine = requests.filter((r) => r.idempotencyKey === key.hash);
      const throttledAt = mine.find((r) => r.outcome === 'throttled')?.at;
      const acceptedAt = mine.find((r) => r.outcome === 'accepted')?.at;
      const waitedMs =
        throttledAt && acceptedAt ? Date.parse(acceptedAt) - Date.parse(throttledAt) : Number.NaN;
      if (
        byPk.get(key.pk)?.state === 'accepted' &&
        acceptances.get(key.hash) === 1 &&
        waitedMs >= (f.spec.retryAfterSeconds ?? 0) * 1000
      )
        honoured += 1;
      else
        violations.push(
          `long Retry-After not honoured: ${key.pk} is ${byPk.get(key.pk)?.state}, waited ${waitedMs} ms, requests ${mine.map((r) => r.outcome).join(',')}`,
        );
    }
    // Check 9: a scheduled receipt whose template revision disappeared ends blocked or stalled, with
    // the reason, and was never sent.
    const templateGone = {
      planned: plan.templateGone.length,
      blocked: 0,
      stalled: 0,
      reasons: {} as Record<string, number>,
    };
    for (const index of plan.templateGone) {
      const key = plan.intents[index]!.keys.email!;
      const row = byPk.get(key.pk);
      const why = row?.history.at(-1)?.why ?? '';
      if ((row?.state === 'blocked' || row?.state === 'stalled') && why) {
        templateGone[row.state] += 1;
        templateGone.reasons[why] = (templateGone.reasons[why] ?? 0) + 1;
      } else
        violations.push(`template gone: ${key.pk} is ${row?.state ?? 'missing'} (${why || 'no reason'})`);
      const sent = requests.filter((r) => r.idempotencyKey === key.hash).length;
      if (sent > 0) violations.push(`template gone: ${key.pk} reached the provider ${sent} times`);
    }

    // Check 10: a bounce read before the `accepted` write still ends bounced, the recipient suppressed.
    const suppressions = new DynamoSuppressionList(
      dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb }),
      state.suppressionTable,
    );
    const earlyBounce = {
      planned: plan.earlyBounces.length,
      readBeforeAnswer: 0,
      recordedBeforeAccepted: 0,
      bounced: 0,
      suppressed: 0,
    };
    for (const f of faults.filter((x) => x.kind === 'early_bounce'))
      if (f.active.answeredAfterEventsRead) earlyBounce.readBeforeAnswer += 1;
    const evidenceStore = new DynamoEvidenceStore(
      dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb }),
      state.ledgerTable,
    );
    for (const index of plan.earlyBounces) {
      const planned = plan.intents[index]!;
      const row = byPk.get(planned.keys.email!.pk);
      // Early: the evidence item holds the bounce recorded before the row's `accepted` entry was written.
      const acceptedAt = row?.history.find((h) => h.s === 'accepted')?.at;
      const { events } = await evidenceStore.eventsFor(planned.keys.email!.hash);
      if (acceptedAt !== undefined && events.some((e) => e.f === 'bounced_permanent' && e.rec < acceptedAt))
        earlyBounce.recordedBeforeAccepted += 1;
      const bounced = row?.delivery?.h?.some((e) => e.f === 'bounced_permanent') ?? false;
      const { suppressed } = await suppressions.isSuppressed(
        planned.intent.tenant ?? 'default',
        planned.intent.recipient.ref,
        'email',
      );
      if (bounced) earlyBounce.bounced += 1;
      if (suppressed) earlyBounce.suppressed += 1;
      if (!bounced || !suppressed)
        violations.push(
          `early bounce not applied: ${planned.keys.email!.pk} is ${row?.state ?? 'missing'} (${row?.delivery?.h?.map((e) => e.f).join(',') || 'no facts'}), recipient ${suppressed ? '' : 'not '}suppressed`,
        );
    }

    // Check 11: a duplicate storm on a breaker-guarded purpose: each message sent once, the breaker
    // counting the real sends only and staying closed.
    const stormKeys = plan.storm.indexes.map((i) => plan.intents[i]!.keys.sms!);
    const accepted = stormKeys.filter(
      (k) => byPk.get(k.pk)?.state === 'accepted' && acceptances.get(k.hash) === 1,
    ).length;
    const blockedByBreaker = rows.filter(
      (r) => r.state === 'blocked' && r.history.some((h) => h.why?.startsWith('spend_breaker_open')),
    ).length;
    let breaker: { sends?: number; state?: string } | undefined;
    if (stormKeys.length) {
      const phone = plan.intents[plan.storm.indexes[0]!]!.intent.recipient.phone!;
      breaker = await new SpendBreaker(
        dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb }),
        state.ledgerTable,
        { workerId: 'soak-check' },
      ).read(SOAK_GUARDED_PURPOSE, countryLabel(countryOf(phone)));
      if (accepted !== stormKeys.length)
        violations.push(`storm: ${accepted} of ${stormKeys.length} messages accepted exactly once`);
      if ((breaker?.sends ?? 0) !== stormKeys.length || breaker?.state === 'open')
        violations.push(
          `storm: the breaker counted ${breaker?.sends ?? 0} sends for ${stormKeys.length} real ones and is ${breaker?.state ?? 'absent'}`,
        );
    }
    if (blockedByBreaker > 0) violations.push(`${blockedByBreaker} rows blocked by an open spend breaker`);

    const durationSeconds = (Date.now() - started) / 1000;
    const { progress: _p, ...rest } = options;
    return {
      options: rest,
      figures: {
        intents: plan.intents.length,
        published: published.filter((p) => p.ok).length,
        duplicatePublishes: plan.duplicates,
        channelsExpected,
        faultsPlanned,
        faultsInjected,
        providerRequests: requests.length,
        providerAcceptances: [...acceptances.values()].reduce((a, b) => a + b, 0),
        providerReplays: requests.filter((r) => r.outcome === 'replayed').length,
        providerAnswersLost: requests.filter((r) => r.outcome === 'dropped').length,
        duplicatesFound: duplicated.length,
        lost,
        rowsByState,
        stranded: strandedRows.length,
        stalled: stalledRows.length,
        sealsLeft: seals.size,
        lastReceive: { planned: plan.lastReceive.length, killed, recovered, byEdge },
        longRetryAfter: {
          seconds: options.longRetryAfterSeconds ?? 45,
          planned: longFaults.length,
          honoured,
        },
        templateGone,
        earlyBounce,
        storm: {
          messages: stormKeys.length,
          copies: plan.storm.copies,
          accepted,
          breakerSends: breaker?.sends ?? 0,
          breakerState: breaker?.state ?? 'absent',
          blockedByBreaker,
        },
        unknown: waiting.filter((w) => w.state === 'unknown').length,
        quarantined: waiting.filter((w) => w.state === 'quarantined').length,
        unknownRecovered,
        retried,
        reconcilePasses,
        reconcileResolved,
        reconcileQuarantined,
        ledgerTransitions,
        archiveTransitions,
        deadLetters,
        secretsFound: scan.hits.length,
        secretScan: scan.scanned,
        startupSeconds: Math.round(startupSeconds * 10) / 10,
        settledSeconds: Math.round(settledSeconds * 10) / 10,
        durationSeconds: Math.round(durationSeconds * 10) / 10,
        intentsPerSecond: Math.round((plan.intents.length / durationSeconds) * 10) / 10,
      },
      waiting,
      faulted: [
        ...plan.faults.map((f) => ({ kind: f.kind, index: f.index, channel: f.channel })),
        ...plan.lastReceive.map((l) => ({
          kind: `last_receive:${l.edge}` as const,
          index: l.index,
          channel: plan.intents[l.index]!.channels[0]!,
        })),
      ].map((f) => {
        const pk = plan.intents[f.index]!.keys[f.channel]!.pk;
        const row = byPk.get(pk);
        return {
          fault: f.kind,
          dedupeKey: pk,
          path: row ? row.history.map((h) => h.s).join(' → ') : 'no row',
        };
      }),
      violations,
    };
  } finally {
    await Promise.allSettled(workers.map(stopChild));
    await stack.stop();
    if (!options.stateDir && !options.keepState) rmSync(stateDir, { recursive: true, force: true });
  }
};
