import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DispatchEdge } from '../../lib/dispatch/Dispatcher.js';
import type { IntentInput } from '../../lib/domain/intent.js';
import { parseIntent } from '../../lib/domain/intent.js';
import { deriveDedupeKey, identityOf } from '../../lib/domain/keys.js';
import { BUILT_IN_PURPOSES, type Channel, PurposeRegistry } from '../../lib/domain/purposes.js';
import type { FaultKind, FaultSpecInput } from '../../lib/simulator/faults.js';
import { healthReportIntent, MARKERS, receiptIntent, resetIntent } from '../support/fixtures.js';

/**
 * A deterministic soak plan: for a seed, the same intents, the same duplicates and the same faults, each
 * fault pinned to one idempotency key (the hash of one channel's dedupe key) so that which message meets
 * which fault does not depend on timing.
 */
export type IntentKind =
  | 'reset_email'
  | 'receipt'
  | 'health_report_fallback'
  | 'reset_both_channels'
  // The edges (issue 26), drawn besides the mix:
  /** A receipt scheduled a few seconds ahead whose template revision is removed before sendAt. */
  | 'receipt_template_gone'
  /** A reset whose permanent bounce is read from the provider's feed before the `accepted` write. */
  | 'reset_early_bounce'
  /** An SMS of the breaker-guarded purpose, published many times at once. */
  | 'otp_storm';

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
export type SoakFaultKind = FaultKind | 'status_429_long' | 'early_bounce';

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
  /**
   * Receipts (GONE_TEMPLATE) never published: claimed `scheduled` a few seconds ahead by a dispatcher
   * in the soak's own process, after which the revision is removed from the stack's templates. At sendAt
   * the sweep resumes them and the stack's dispatchers, which never loaded the revision, cannot render
   * them: each must end `blocked` or `stalled` with the reason, not stay `scheduled`.
   */
  templateGone: number[];
  /** Resets whose bounce is read from the feed before the `accepted` write (their `early_bounce` fault). */
  earlyBounces: number[];
  /** SMS of SOAK_GUARDED_PURPOSE, each published `copies` times in a row; the breaker allows `maxSends`. */
  storm: { indexes: number[]; copies: number; maxSends: number };
  /** Purpose policies the stack runs with (SENDPROOF_PURPOSES). */
  purposes: unknown[];
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
  /** Share of intents added as receipts whose template revision disappears before sendAt (default 0). */
  templateGoneRate?: number;
  /** Share of intents added as resets whose bounce beats the `accepted` write (default 0). */
  earlyBounceRate?: number;
  /** Share of intents added as breaker-guarded SMS, each published `stormCopies` times (default 0). */
  stormRate?: number;
  /** Publishes of each storm message (default 8). */
  stormCopies?: number;
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

export const SOAK_FAULT_KINDS: readonly SoakFaultKind[] = [...FAULT_MIX, 'status_429_long', 'early_bounce'];

/** The receipt revision the template-gone intents use, removed from the stack's copy of the templates. */
export const GONE_TEMPLATE = { id: 'receipt', revision: 'v5' } as const;

/** The purpose the duplicate storm uses: the reset's policy, with an SMS spend breaker. */
export const SOAK_GUARDED_PURPOSE = 'soak-otp';
export const guardedPurpose = (maxSends: number) => ({
  ...BUILT_IN_PURPOSES.find((p) => p.purpose === 'password-reset')!,
  purpose: SOAK_GUARDED_PURPOSE,
  policyVersion: `${SOAK_GUARDED_PURPOSE}/1`,
  // As many sends as the storm has messages: one counted duplicate more would open it.
  smsSpendBreaker: { maxSends, windowSeconds: 3600, cooldownSeconds: 900 },
});

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

  // The edges, appended after the mix (their own generator: a seed keeps the rest of its plan).
  const edges = seededRandom(options.seed ^ 0x0ed9e5);
  const stormCount = Math.round(options.intents * (options.stormRate ?? 0));
  const purposeList = stormCount > 0 ? [guardedPurpose(stormCount)] : [];
  const edgePurposes = PurposeRegistry.withOverrides(purposeList);
  const add = (kind: IntentKind, intent: IntentInput): PlannedIntent => {
    const parsed = parseIntent(intent, { purposes: edgePurposes, clock: { now: () => options.now } });
    if (!parsed.ok) throw parsed.error;
    const channels = [...parsed.value.intent.channels];
    const keys: PlannedIntent['keys'] = {};
    for (const channel of channels) {
      const key = deriveDedupeKey(identityOf(parsed.value.intent, parsed.value.policy, channel));
      keys[channel] = { pk: key.readable, hash: key.hash };
    }
    const planned = { index: intents.length, kind, intent, delivery: parsed.value.delivery, keys, channels };
    intents.push(planned);
    return planned;
  };
  const templateGone = Array.from(
    { length: Math.round(options.intents * (options.templateGoneRate ?? 0)) },
    (_, n) =>
      add(
        'receipt_template_gone',
        receiptIntent({
          eventId: `soak-tg-${n}`,
          recipient: { ref: `soak-tg-u${n}`, email: MARKERS.email },
          template: { ...GONE_TEMPLATE },
          // Rewritten when it is claimed (a few seconds ahead of then): see runSoak.
          sendAt: new Date(options.now + 3_600_000).toISOString(),
        }),
      ).index,
  );
  const earlyBounces = Array.from(
    { length: Math.round(options.intents * (options.earlyBounceRate ?? 0)) },
    (_, n) => {
      const planned = add(
        'reset_early_bounce',
        resetIntent({
          eventId: `soak-eb-${n}`,
          recipient: { ref: `soak-eb-u${n}`, email: MARKERS.email },
          secrets: { token: `${MARKERS.token}-eb${n}` },
          expiresAt,
        }),
      );
      faults.push({
        kind: 'early_bounce',
        index: planned.index,
        channel: 'email',
        spec: {
          match: { idempotencyKey: planned.keys.email!.hash },
          fault: 'bounce',
          times: 1,
          deliverAfterMs: 0,
          // Held until a feed reader has recorded the bounce (it asks past it); at most 7 s, inside the
          // 8 s visibility timeout, so no redelivery meets the send in flight.
          answerAfterEventsRead: { afterMs: 100, maxMs: 7_000 },
        },
      });
      return planned.index;
    },
  );
  const copies = options.stormCopies ?? 8;
  const storm = Array.from(
    { length: stormCount },
    (_, n) =>
      add(
        'otp_storm',
        resetIntent({
          eventId: `soak-st-${n}`,
          purpose: SOAK_GUARDED_PURPOSE,
          channels: ['sms'],
          recipient: { ref: `soak-st-u${n}`, phone: MARKERS.phone },
          secrets: { token: `${MARKERS.token}-st${n}` },
          expiresAt,
        }),
      ).index,
  );
  const order = publishOrder.filter((i) => !unpublished.has(i));
  // First in the stream: the feed is short then, so a reader gets to the bounce within the held answer.
  order.unshift(...earlyBounces);
  // The storm: every copy of every storm message back to back, somewhere in the stream.
  const burst = storm.flatMap((index) => Array.from({ length: copies }, () => index));
  order.splice(Math.floor(edges() * (order.length + 1)), 0, ...burst);
  return {
    intents,
    publishOrder: order,
    duplicates,
    faults,
    lastReceive,
    templateGone,
    earlyBounces,
    storm: { indexes: storm, copies, maxSends: stormCount },
    purposes: purposeList,
    markers: [MARKERS.token, MARKERS.email, MARKERS.phone, PDF_MARKER],
  };
};
