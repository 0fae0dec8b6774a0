import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DispatchEdge } from '../../lib/dispatch/Dispatcher.js';
import type { IntentInput } from '../../lib/domain/intent.js';
import { parseIntent } from '../../lib/domain/intent.js';
import { deriveDedupeKey, identityOf } from '../../lib/domain/keys.js';
import { type Channel, PurposeRegistry } from '../../lib/domain/purposes.js';
import type { FaultKind, FaultSpecInput } from '../../lib/simulator/faults.js';
import { healthReportIntent, MARKERS, receiptIntent, resetIntent } from '../support/fixtures.js';

/**
 * A deterministic soak plan: for a seed, the same intents, the same duplicates and the same faults, each
 * fault pinned to one idempotency key (the hash of one channel's dedupe key) so that which message meets
 * which fault does not depend on timing.
 */
export type IntentKind = 'reset_email' | 'receipt' | 'health_report_fallback' | 'reset_both_channels';

export interface PlannedIntent {
  index: number;
  kind: IntentKind;
  intent: IntentInput;
  delivery: 'all' | 'fallback';
  /** Channel → dedupe key (readable, the ledger's pk) and its hash (the provider's idempotency key). */
  keys: Partial<Record<Channel, { pk: string; hash: string }>>;
  channels: Channel[];
}

/**
 * The simulator's fault kinds, plus `status_429_long`: a 429 whose Retry-After is longer than the
 * dispatcher's inline budget (and, with the default 45 s, than five of the local visibility timeouts).
 */
export type SoakFaultKind = FaultKind | 'status_429_long';

/** The edges a last-receive crash stops at. */
export const LAST_RECEIVE_EDGES = [
  'after_seal',
  'after_claim',
  'after_dispatching',
] as const satisfies readonly DispatchEdge[];
export type LastReceiveEdge = (typeof LAST_RECEIVE_EDGES)[number];

export interface PlannedFault {
  kind: SoakFaultKind;
  /** The intent and channel whose first provider request meets the fault. */
  index: number;
  channel: Channel;
  spec: FaultSpecInput;
}

export interface SoakPlan {
  intents: PlannedIntent[];
  /** What is published, in order: every intent once, plus duplicates of some at later positions. */
  publishOrder: number[];
  duplicates: number;
  faults: PlannedFault[];
  /**
   * Intents never published: each is handed on its last receive to a dispatcher process that is
   * SIGKILLed at the edge (test/reliability/soakCrashWorker.ts); only the ledger's sweep can finish it.
   */
  lastReceive: Array<{ index: number; edge: LastReceiveEdge }>;
  /** Values that must never be found at rest, in a log, a metric or the archive. */
  markers: string[];
}

export interface SoakPlanOptions {
  intents: number;
  /** Share of intents whose first channel request meets a fault (default 0.05). */
  faultRate: number;
  /** Share of intents published a second time (default 0.02). */
  duplicateRate: number;
  seed: number;
  /** Share of intents delivered on their last receive to a dispatcher that is killed (default 0). */
  lastReceiveRate?: number;
  /** Share of intents whose first request meets a 429 with a long Retry-After (default 0). */
  longRetryRate?: number;
  /** That Retry-After, in seconds (default 45). */
  longRetryAfterSeconds?: number;
  /** Folder for the report PDF the health reports attach by file:// reference. */
  workDir: string;
  now: number;
}

export const FAULT_MIX: readonly FaultKind[] = [
  'accept_then_drop',
  'drop_before_accept',
  'status_429',
  'status_500',
  'reject',
  'delay',
];

export const SOAK_FAULT_KINDS: readonly SoakFaultKind[] = [...FAULT_MIX, 'status_429_long'];

/** mulberry32: a small seeded PRNG, so a seed replays the same plan. */
export const seededRandom = (seed: number): (() => number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

/** A marker inside the attachment: attachment bytes must never reach the ledger, a log or the archive. */
export const PDF_MARKER = 'SOAK-PDF-BODY-7c1e';

const faultSpec = (kind: FaultKind, hash: string): FaultSpecInput => ({
  match: { idempotencyKey: hash },
  fault: kind,
  times: 1,
  ...(kind === 'status_429' ? { retryAfterSeconds: 1 } : {}),
  ...(kind === 'delay' ? { delayMs: 1_500 } : {}),
});

export const planSoak = (options: SoakPlanOptions): SoakPlan => {
  const random = seededRandom(options.seed);
  const purposes = new PurposeRegistry();
  const pdf = `%PDF-1.4\n% ${PDF_MARKER}\n%%EOF\n`;
  const pdfPath = join(options.workDir, 'soak-report.pdf');
  writeFileSync(pdfPath, pdf);
  const attachment = {
    uri: pathToFileURL(pdfPath).href,
    sha256: createHash('sha256').update(pdf).digest('hex'),
    filename: 'soak-report.pdf',
    contentType: 'application/pdf',
  };
  const expiresAt = new Date(options.now + 2 * 3_600_000).toISOString();
  const recipient = (i: number) => ({ ref: `soak-u${i}`, email: MARKERS.email, phone: MARKERS.phone });

  const intents: PlannedIntent[] = [];
  const faults: PlannedFault[] = [];
  for (let i = 0; i < options.intents; i += 1) {
    const draw = random();
    const kind: IntentKind =
      draw < 0.4
        ? 'reset_email'
        : draw < 0.65
          ? 'receipt'
          : draw < 0.85
            ? 'health_report_fallback'
            : 'reset_both_channels';
    const eventId = `soak-${i}`;
    const secrets = { token: `${MARKERS.token}-${i}` };
    const intent: IntentInput =
      kind === 'reset_email'
        ? resetIntent({ eventId, recipient: recipient(i), secrets, expiresAt })
        : kind === 'receipt'
          ? receiptIntent({ eventId, recipient: { ref: `soak-u${i}`, email: MARKERS.email } })
          : kind === 'health_report_fallback'
            ? healthReportIntent({ eventId, recipient: recipient(i), attachments: [attachment] })
            : resetIntent({
                eventId,
                recipient: recipient(i),
                channels: ['email', 'sms'],
                secrets,
                expiresAt,
              });
    const parsed = parseIntent(intent, { purposes, clock: { now: () => options.now } });
    if (!parsed.ok) throw parsed.error;
    const { policy, delivery } = parsed.value;
    const channels = [...parsed.value.intent.channels];
    const keys: PlannedIntent['keys'] = {};
    for (const channel of channels) {
      const key = deriveDedupeKey(identityOf(parsed.value.intent, policy, channel));
      keys[channel] = { pk: key.readable, hash: key.hash };
    }
    intents.push({ index: i, kind, intent, delivery, keys, channels });
    if (random() < options.faultRate) {
      const faultKind = FAULT_MIX[Math.floor(random() * FAULT_MIX.length)]!;
      // A fallback's SMS is only reached after the email fails, so its fault sits on the email.
      const channel =
        delivery === 'fallback' ? channels[0]! : channels[Math.floor(random() * channels.length)]!;
      faults.push({ kind: faultKind, index: i, channel, spec: faultSpec(faultKind, keys[channel]!.hash) });
    }
  }
  const publishOrder = intents.map((p) => p.index);
  let duplicates = 0;
  for (const planned of intents) {
    if (random() >= options.duplicateRate) continue;
    // The copy goes somewhere after the original: sometimes while it is in flight, sometimes long after.
    const at = planned.index + 1 + Math.floor(random() * (publishOrder.length - planned.index));
    publishOrder.splice(Math.min(at, publishOrder.length), 0, planned.index);
    duplicates += 1;
  }

  // Long Retry-After faults and last-receive crashes, drawn with their own generator so a seed keeps
  // the rest of its plan. Each picks intents with no other fault that are published once; a long
  // Retry-After goes to the first half of the stream, so its wait overlaps the rest of the run.
  const extra = seededRandom(options.seed ^ 0x5eed1a57);
  const faulted = new Set(faults.map((f) => f.index));
  const published = new Map<number, number>();
  for (const i of publishOrder) published.set(i, (published.get(i) ?? 0) + 1);
  const free = (i: number) => !faulted.has(i) && published.get(i) === 1;
  const pick = (eligible: number[], count: number): number[] => {
    const pool = [...eligible];
    const chosen: number[] = [];
    while (chosen.length < count && pool.length > 0)
      chosen.push(pool.splice(Math.floor(extra() * pool.length), 1)[0]!);
    return chosen.sort((a, b) => a - b);
  };
  const longCount = Math.round(options.intents * (options.longRetryRate ?? 0));
  const firstHalf = publishOrder.slice(0, Math.ceil(publishOrder.length / 2)).filter(free);
  for (const index of pick([...new Set(firstHalf)], longCount)) {
    const planned = intents[index]!;
    const channel = planned.channels[0]!;
    faults.push({
      kind: 'status_429_long',
      index,
      channel,
      spec: {
        match: { idempotencyKey: planned.keys[channel]!.hash },
        fault: 'status_429',
        times: 1,
        retryAfterSeconds: options.longRetryAfterSeconds ?? 45,
      },
    });
    faulted.add(index);
  }
  const lastCount = Math.round(options.intents * (options.lastReceiveRate ?? 0));
  const single = intents
    .filter((p) => (p.kind === 'reset_email' || p.kind === 'receipt') && free(p.index))
    .map((p) => p.index);
  const lastReceive = pick(single, lastCount).map((index, n) => ({
    index,
    edge: LAST_RECEIVE_EDGES[n % LAST_RECEIVE_EDGES.length]!,
  }));
  const unpublished = new Set(lastReceive.map((l) => l.index));
  return {
    intents,
    publishOrder: publishOrder.filter((i) => !unpublished.has(i)),
    duplicates,
    faults,
    lastReceive,
    markers: [MARKERS.token, MARKERS.email, MARKERS.phone, PDF_MARKER],
  };
};
