import { nextDelayMs } from '../domain/backoff.js';
import { SendproofError } from '../domain/errors.js';
import type { ValidIntent } from '../domain/intent.js';
import { type Channel, retentionTtl } from '../domain/purposes.js';
import type { DeliveryState } from '../domain/states.js';
import type { DeliveryRecord, GateFacts, TransitionRequest } from '../ledger/port.js';
import { boundWhy } from '../ledger/why.js';
import type { AdmissionTicket } from '../rate/Admission.js';
import type { RenderedMessage } from '../templates/port.js';
import {
  type OutboundMessage,
  providerCanHold,
  type SendResult,
  type Transport,
} from '../transports/port.js';
import type { ChannelAction, ChannelOutcome, DispatcherDeps } from './types.js';

/**
 * What every phase shares: the ports and settings of one dispatcher (the ChannelRun's context), the
 * intent being handled, and the channel on its way through the phases. Phases (lib/dispatch/phases/*)
 * read and write only through these; the driver (lib/dispatch/driver.ts) runs them.
 */
export interface DispatchContext extends DispatcherDeps {
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  inlineRetryBudgetMs: number;
  backoff: { baseMs: number; capMs: number };
  parkGraceMs: number;
}

const DEFAULT_BACKOFF = { baseMs: 200, capMs: 5_000 };

export const resolveContext = (deps: DispatcherDeps): DispatchContext => ({
  ...deps,
  sleep: deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
  random: deps.random ?? Math.random,
  inlineRetryBudgetMs: deps.inlineRetryBudgetMs ?? 10_000,
  backoff: deps.backoff ?? DEFAULT_BACKOFF,
  parkGraceMs: deps.parkGraceMs ?? 2 * deps.leaseMs,
});

/** One intent being handled: what every phase of every channel needs. */
export interface Job {
  valid: ValidIntent;
  /** The message body as received (or as unsealed): sealed again when work is parked. */
  body: string;
  logicalKey: string;
  /** True once this handling has sealed the intent (one seal write per handling at most). */
  sealed: boolean;
  /**
   * The body came from the ledger's seal (a resume notice): it is the rows' own intent, so a row it can
   * no longer send (template gone, content hash changed) will never be sent by anything.
   */
  resumed: boolean;
  /** Suppression entries and fallback flows read once for the whole queue batch, when given. */
  facts?: GateFacts;
  /**
   * When the queue received the caller's message (SQS `SentTimestamp`): recorded as the request time of
   * an intent that states no `publishedAt`. Never a resume notice's own time.
   */
  queueSentAt?: number;
}

/** One channel on its way through the phases, with the ports it uses (`ctx`). */
export interface ChannelRun {
  ctx: DispatchContext;
  job: Job;
  channel: Channel;
  transport: Transport;
  rendered: RenderedMessage;
  hash: string;
  dedupeKey: string;
  attachments?: OutboundMessage['attachments'];
  /** Set when the last request asked the provider to hold the message until this time (epoch ms). */
  handedAt?: number;
  /** The admission layer let this channel through and its token is not spent yet (lib/rate). */
  admitted?: boolean;
  /** What that admission holds: pace tokens (refunded if no send follows) and the breaker to count in. */
  ticket?: AdmissionTicket;
  /** This send is the one probe of a held transport (lib/rate/TransportHolds.ts): its answer lifts or extends the hold. */
  holdProbe?: boolean;
  /** This attempt is the provider circuit's half-open probe (lib/transports/health.ts). */
  probe?: boolean;
  /** Providers this attempt skipped because their circuit was open (lib/dispatch/providers.ts). */
  skipped?: string[];
}

/**
 * What the read-only gates decided before a claim: dispatch now, or write the row directly in the state
 * a gate chose. Nothing has been written when this exists.
 */
export type GateVerdict =
  | { kind: 'dispatch' }
  /** Scheduled ahead and held by the ledger: claimed `scheduled`; every gate runs when it is due. */
  | { kind: 'schedule'; dueAt: number }
  | { kind: 'refuse'; state: 'expired' | 'suppressed' | 'blocked'; why: string }
  /** No send token now: the claim waits in `retry_wait` (`paced`) until `until`, no attempt spent. */
  | { kind: 'pace'; until: number; why?: string };

/** What a phase returns: the next phase (with the row as it now stands), or the channel's outcome. */
export type Step =
  | { next: 'prepare' }
  | { next: 'claim'; verdict: GateVerdict }
  | { next: 'gates'; row: DeliveryRecord }
  | { next: 'confirm'; row: DeliveryRecord }
  | { next: 'send'; row: DeliveryRecord }
  | { next: 'record'; row: DeliveryRecord; result: SendResult }
  /** The row moved while the provider answered (`current`, as the refused write returned it). */
  | { next: 'late_answer'; row: DeliveryRecord; result: SendResult; lost: LostRace }
  | { next: 'wait'; row: DeliveryRecord; delayMs: number }
  | { done: ChannelOutcome };

export type PhaseStep = Exclude<Step, { done: ChannelOutcome }>;
export type StepOf<N extends PhaseStep['next']> = Extract<PhaseStep, { next: N }>;

/** Thrown when a transition this worker expected to make was refused because another worker moved first. */
export class LostRace extends SendproofError {
  constructor(
    pk: string,
    readonly current: DeliveryRecord | undefined,
  ) {
    super('retryable', 'lost_race', `row ${pk} moved under this worker`);
  }
}

/**
 * One conditioned transition; a refusal means another worker owns the row now. `why` is a short
 * machine-readable phrase, bounded by the one rule (lib/ledger/why.ts).
 */
export const move = async (
  ctx: DispatchContext,
  row: DeliveryRecord,
  to: DeliveryState,
  why: string,
  set: TransitionRequest['set'] = {},
): Promise<DeliveryRecord> => {
  const result = await ctx.ledger.transition({
    pk: row.pk,
    from: row.state,
    to,
    expectedVersion: row.version,
    by: ctx.workerId,
    why: boundWhy(why),
    set,
    now: ctx.clock.now(),
  });
  if (result.kind !== 'ok') throw new LostRace(row.pk, result.current);
  // Evidence kept while the row had no outcome (it beat this write: the recorder marked the row `evk`)
  // is applied the moment the provider's acceptance is written: a fast bounce suppresses and falls back.
  if (result.record.evk === true && (to === 'accepted' || to === 'provider_scheduled'))
    return (await ctx.evidence?.applyRecordedEvidence(result.record)) ?? result.record;
  return result.record;
};

export const done = (
  row: DeliveryRecord,
  action: ChannelAction,
  extra: { providerMessageId?: string; dueAt?: number } = {},
): Step => ({ done: { channel: row.channel, dedupeKey: row.pk, state: row.state, action, ...extra } });

/** The TTL a row written final now keeps: the purpose's retention. */
export const ttlFor = (run: ChannelRun, now: number): number => retentionTtl(run.job.valid.policy, now);

/** A replay's refusal: the row stays (or becomes) `unknown`, for the reconciler. */
export const leaveUnknown = async (run: ChannelRun, row: DeliveryRecord, why: string): Promise<Step> => {
  if (row.state === 'unknown') return done(row, 'left_for_reconciler');
  const moved = await move(run.ctx, row, 'unknown', why);
  return done(moved, 'left_for_reconciler');
};

export const delayFor = (ctx: DispatchContext, attempt: number, retryAfterMs?: number): number =>
  nextDelayMs({
    attempt: Math.max(1, attempt),
    baseMs: ctx.backoff.baseMs,
    capMs: ctx.backoff.capMs,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    random: ctx.random,
  });

/**
 * Whether an intent goes through its notification's fallback flow: it asks for fallback, or its purpose
 * falls back by default. The intent boundary refuses `delivery: "fallback"` on a purpose that does not
 * (lib/domain/intent.ts), so every intent of a notification that can have a flow takes this path.
 */
export const followsFlow = (valid: ValidIntent): boolean =>
  valid.delivery === 'fallback' || valid.policy.defaultDelivery === 'fallback';

/** Scheduled, and not yet due at `now`. */
export const isScheduledAhead = (valid: ValidIntent, now: number): boolean =>
  valid.sendAtMs !== undefined && valid.sendAtMs > now;

/** Provider-side scheduling: the purpose asks for it and the adapter can hold (and, if needed, cancel) it. */
export const providerHolds = (run: ChannelRun, now: number): boolean => {
  const { valid } = run.job;
  return (
    valid.sendAtMs !== undefined &&
    valid.policy.providerScheduling &&
    providerCanHold(run.transport, valid.sendAtMs, now, valid.policy.cancellable)
  );
};

/** A scheduled send the ledger holds (claimed `scheduled`) rather than the provider. */
export const ledgerSchedules = (run: ChannelRun, now: number): boolean =>
  isScheduledAhead(run.job.valid, now) && !providerHolds(run, now);

export const iso = (ms: number): string => new Date(ms).toISOString();
