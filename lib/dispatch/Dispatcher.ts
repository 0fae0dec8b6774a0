import type { AttachmentStore } from '../attachments/AttachmentStore.js';
import { sha256Hex } from '../attachments/AttachmentStore.js';
import { nextDelayMs } from '../domain/backoff.js';
import { cancelCovers, cancelWhy } from '../domain/cancel.js';
import type { Clock } from '../domain/clock.js';
import { contentHash } from '../domain/content.js';
import { SendproofError } from '../domain/errors.js';
import { parseIntent, type ValidIntent } from '../domain/intent.js';
import { deriveDedupeKey, deriveLogicalKey, identityOf } from '../domain/keys.js';
import { type Channel, type PurposeRegistry, retentionTtl } from '../domain/purposes.js';
import { replayWindowOpen } from '../domain/replay.js';
import { decideExisting, definitivelyFailed, isReplay } from '../domain/resume.js';
import { type DeliveryState, isTerminal } from '../domain/states.js';
import type { RecordedEvidence } from '../evidence/EvidenceRecorder.js';
import { expireDispatchingLease } from '../ledger/leases.js';
import type {
  CancelOrder,
  DeliveryRecord,
  GateFacts,
  GateFactsReader,
  Ledger,
  SuppressionList,
  TransitionRequest,
} from '../ledger/port.js';
import { boundWhy } from '../ledger/why.js';
import { type Logger, METRIC, type MetricsSink } from '../observability.js';
import type { Admission, AdmissionVerdict } from '../rate/Admission.js';
import type { IntentSealer } from '../seal/IntentSealer.js';
import type { RenderedMessage, TemplateRenderer } from '../templates/port.js';
import {
  type OutboundMessage,
  providerCanHold,
  type SendResult,
  type Transport,
} from '../transports/port.js';
import { buildClaimRecord, type ClaimInitial } from './claimRecord.js';
import { parseQueueMessage, type ResendOrder } from './queueMessage.js';
import { recordInvalidBody, recordInvalidChannel, recordMismatch } from './sideRows.js';

/**
 * The named edges of one dispatch: each phase below ends at one of them, and the loop calls the probe
 * there (crash tests stop the worker at each; in production the probe is absent).
 *
 *   [seal]─► after_seal
 *   before_claim ─► claim ─► after_claim ─► gates ─► after_dispatching ─► send ─► after_provider
 *        ─► record ─► after_outcome ─► (wait ─► after_wait ─► gates …)
 *   a gate that refuses writes its final state and stops at after_gate.
 */
export type DispatchEdge =
  | 'after_seal'
  | 'before_claim'
  | 'after_claim'
  | 'after_gate'
  | 'after_dispatching'
  | 'after_provider'
  | 'after_outcome'
  | 'after_wait';
export type EdgeProbe = (
  edge: DispatchEdge,
  context: { dedupeKey: string; channel: Channel; state?: DeliveryState },
) => void | Promise<void>;

/** The observability ports live once, in lib/observability.ts. */
export type DispatchLogger = Logger;
export type { MetricsSink };

export interface DispatcherDeps {
  ledger: Ledger;
  suppressions: SuppressionList;
  renderer: TemplateRenderer;
  transports: Readonly<Record<Channel, Transport>>;
  attachments: AttachmentStore;
  purposes: PurposeRegistry;
  clock: Clock;
  /** HMAC key for content hashes (from Secrets Manager in AWS). */
  contentHashKey: string;
  /** Seals intent bodies when work leaves the happy path (AWS Encryption SDK). */
  sealer: IntentSealer;
  /** Reads a whole queue batch's suppression entries and fallback flows at once (see `prefetch`). */
  gateFacts?: GateFactsReader;
  /** Settles a row that just became `unknown` from provider events recorded earlier (lib/evidence). */
  evidence?: RecordedEvidence;
  workerId: string;
  leaseMs: number;
  /**
   * The queue's maxReceiveCount: on the last receive the intent is sealed before anything else, so the
   * ledger's sweep owns it if this delivery dies. Absent: never treated as the last receive.
   */
  maxReceiveCount?: number;
  /**
   * How long after a parked message's own due time the ledger's sweep looks (the queue message normally
   * comes back first). Default: 2 × the lease.
   */
  parkGraceMs?: number;
  /** Longest wait spent retrying inside one invocation; a longer Retry-After goes back to the queue. */
  inlineRetryBudgetMs?: number;
  backoff?: { baseMs: number; capMs: number };
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  logger: DispatchLogger;
  metrics?: MetricsSink;
  /** Rate control and SMS anti-abuse before every provider call (lib/rate/Admission.ts). */
  admission?: Admission;
  probe?: EdgeProbe;
}

/** What this worker did with one channel. The names are the documentation of the outcomes. */
export type ChannelAction =
  | 'sent'
  | 'rejected_by_provider'
  | 'retry_budget_exhausted'
  /** The row is `unknown`; the reconciler and evidence settle it (a keyed replay may come back). */
  | 'marked_unknown'
  /** The message must come back (a live lease elsewhere, a retry not yet due, a keyed replay). */
  | 'retry_later'
  | 'left_for_reconciler'
  | 'already_final'
  | 'content_mismatch_blocked'
  | 'expired'
  | 'suppressed'
  | 'blocked'
  | 'render_failed'
  /** The row moved under this worker while the provider answered; the answer was applied to it. */
  | 'late_answer_applied'
  /** The fallback's active channel is not settled; the ledger's seal owns the wait. */
  | 'waiting_for_active_channel'
  /** The row became unknown and provider events recorded earlier settled it at once. */
  | 'settled_by_recorded_evidence'
  /** Claimed as `scheduled`: sealed, and the ledger's sweep dispatches it at sendAt. */
  | 'scheduled'
  /** The provider accepted it and holds it until sendAt (`provider_scheduled`). */
  | 'handed_to_provider_schedule'
  /** A committed cancel marker stopped it before any provider call. */
  | 'cancelled';

/** Where one channel of an intent ended up after this delivery of the message. */
export interface ChannelOutcome {
  channel: Channel;
  dedupeKey: string;
  state: DeliveryState;
  action: ChannelAction;
  providerMessageId?: string;
  /** With `retry_later`: when the message is worth receiving again (epoch ms). */
  dueAt?: number;
}

/**
 * - `done`: nothing more will happen for this queue message; acknowledge it.
 * - `retry_later`: the message must come back; `visibleAfterMs` says when (the SQS handler moves its
 *   visibility there, so a long Retry-After does not burn receives).
 */
export interface IntentOutcome {
  disposition: 'done' | 'retry_later';
  visibleAfterMs?: number;
  channels: ChannelOutcome[];
  invalid?: { issues: Array<{ field: string; message: string }> };
}

export interface QueueEnvelope {
  messageId: string;
  receiveCount?: number;
}

/** Thrown when a transition this worker expected to make was refused because another worker moved first. */
class LostRace extends SendproofError {
  constructor(
    pk: string,
    readonly current: DeliveryRecord | undefined,
  ) {
    super('retryable', 'lost_race', `row ${pk} moved under this worker`);
  }
}

const DEFAULT_BACKOFF = { baseMs: 200, capMs: 5_000 };
const GATE_METRIC = {
  expired: METRIC.expired,
  suppressed: METRIC.suppressed,
  blocked: METRIC.blocked,
} as const;
/** The longest visibility SQS allows. */
const MAX_VISIBILITY_MS = 12 * 3600 * 1000;

/**
 * What the read-only gates decided before a claim: dispatch now, or write the row directly in the state
 * a gate chose. Nothing has been written when this exists.
 */
type GateVerdict =
  | { kind: 'dispatch' }
  /** Scheduled ahead and held by the ledger: claimed `scheduled`; every gate runs when it is due. */
  | { kind: 'schedule'; dueAt: number }
  | { kind: 'refuse'; state: 'expired' | 'suppressed' | 'blocked'; why: string }
  /** No send token now: the claim waits in `retry_wait` (`paced`) until `until`, no attempt spent. */
  | { kind: 'pace'; until: number };

/** One intent being handled: what every phase of every channel needs. */
interface Job {
  valid: ValidIntent;
  /** The message body as received (or as unsealed): sealed again when work is parked. */
  body: string;
  logicalKey: string;
  /** True once this handling has sealed the intent (one seal write per handling at most). */
  sealed: boolean;
  /** Suppression entries and fallback flows read once for the whole queue batch, when given. */
  facts?: GateFacts;
}

/** One channel on its way through the phases. */
interface ChannelRun {
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
}

/** What a phase returns: the next phase (with the row as it now stands), or the channel's outcome. */
type Step =
  | { next: 'prepare' }
  | { next: 'claim'; verdict: GateVerdict }
  | { next: 'gates'; row: DeliveryRecord }
  | { next: 'confirm'; row: DeliveryRecord }
  | { next: 'send'; row: DeliveryRecord }
  | { next: 'record'; row: DeliveryRecord; result: SendResult }
  | { next: 'wait'; row: DeliveryRecord; delayMs: number }
  | { done: ChannelOutcome };

/**
 * The dispatcher: from one queue message to provider calls and honest ledger outcomes, as phases in the
 * spirit of Stripe-style idempotency keys (each foreign call in its own phase, each phase ending in at
 * most one conditional write that is also its recovery point):
 *
 *   claim   conditional put (or the existing row decides: lib/domain/resume.ts)
 *   gates   expiry → suppression → attachment checksums → expiry again → replay window → `dispatching`
 *   confirm cancellable purposes only: the cancel marker, read strongly consistently after `dispatching`
 *   send    the provider call, same key every time; nothing written
 *   record  the outcome: accepted | rejected | unknown | retry_wait
 *   wait    inline back-off, or park: sealed intent + the message comes back at the due time
 */
export class Dispatcher {
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly inlineRetryBudgetMs: number;
  private readonly backoff: { baseMs: number; capMs: number };
  private readonly parkGraceMs: number;

  constructor(private readonly deps: DispatcherDeps) {
    this.sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.random = deps.random ?? Math.random;
    this.inlineRetryBudgetMs = deps.inlineRetryBudgetMs ?? 10_000;
    this.backoff = deps.backoff ?? DEFAULT_BACKOFF;
    this.parkGraceMs = deps.parkGraceMs ?? 2 * deps.leaseMs;
  }

  /** Handles one queue message body. Throws only for infrastructure failures (the message will come back). */
  async handle(rawBody: string, envelope: QueueEnvelope, facts?: GateFacts): Promise<IntentOutcome> {
    const message = parseQueueMessage(rawBody);
    let body = rawBody;
    if (message.kind === 'resume') {
      const opened = await this.unseal(message.logicalKey);
      if (!opened) return { disposition: 'done', channels: [] };
      body = message.resend ? asResend(opened, message.resend) : opened;
    }
    const parsed = parseIntent(body, {
      purposes: this.deps.purposes,
      clock: this.deps.clock,
      allowExpired: true,
    });
    if (!parsed.ok) {
      await recordInvalidBody(this.sideRowDeps(), body, envelope, parsed.error.issues);
      this.deps.metrics?.count(METRIC.intentsInvalid);
      return { disposition: 'done', channels: [], invalid: { issues: parsed.error.issues } };
    }
    const valid = parsed.value;
    const job: Job = {
      valid,
      body,
      logicalKey: logicalKeyOf(valid),
      sealed: false,
      ...(facts ? { facts } : {}),
    };
    const lastReceive =
      this.deps.maxReceiveCount !== undefined && (envelope.receiveCount ?? 1) >= this.deps.maxReceiveCount;
    // A fallback may need its next channel long after this message is gone (a bounce hours later), and
    // a last receive has no next receive: either way the ledger takes the intent now, before any claim.
    const sealReason = valid.delivery === 'fallback' ? 'fallback' : lastReceive ? 'last_receive' : undefined;
    if (isScheduledAhead(valid, this.deps.clock.now())) {
      // A scheduled intent: the ledger (the seal, due at sendAt) owns it from now; the message is acknowledged.
      await this.park(job, 'scheduled', valid.sendAtMs!);
    } else if (sealReason) {
      await this.park(job, sealReason, this.deps.clock.now() + this.deps.leaseMs);
      const first = valid.intent.channels[0]!;
      await this.deps.probe?.('after_seal', {
        dedupeKey: deriveDedupeKey(identityOf(valid.intent, valid.policy, first)).readable,
        channel: first,
      });
    }

    // The fallback pointer rules every intent of a logical notification that has one, whatever the
    // intent's own delivery mode says: at most one channel active.
    const flowExists =
      valid.delivery === 'fallback' ||
      (facts?.flowExists(job.logicalKey) ?? (await this.deps.ledger.getFlow(job.logicalKey)) !== undefined);
    const channels = flowExists
      ? await this.handleFallback(job)
      : await Promise.all(valid.intent.channels.map((channel) => this.deliverChannel(job, channel)));
    const waiting = channels.filter((c) => c.action === 'retry_later');
    if (waiting.length === 0) return { disposition: 'done', channels };
    const now = this.deps.clock.now();
    const dueAt = Math.min(...waiting.map((c) => c.dueAt ?? now));
    return {
      disposition: 'retry_later',
      visibleAfterMs: Math.min(Math.max(0, dueAt - now), MAX_VISIBILITY_MS),
      channels,
    };
  }

  /**
   * Reads what the read-only gates of a whole queue batch need, in one strongly consistent BatchGetItem
   * over both tables: each recipient's suppression entry and whether each notification has a fallback
   * flow. Bodies that do not parse are skipped (handle() records them). Without a reader: undefined,
   * and each record reads for itself.
   */
  async prefetch(bodies: readonly string[]): Promise<GateFacts | undefined> {
    if (!this.deps.gateFacts) return undefined;
    const recipients = new Map<string, { tenant: string; recipientRef: string }>();
    const logicalKeys = new Set<string>();
    for (const body of bodies) {
      if (parseQueueMessage(body).kind !== 'intent') continue;
      const parsed = parseIntent(body, {
        purposes: this.deps.purposes,
        clock: this.deps.clock,
        allowExpired: true,
      });
      if (!parsed.ok) continue;
      const { intent } = parsed.value;
      recipients.set(`${intent.tenant}:${intent.recipient.ref}`, {
        tenant: intent.tenant,
        recipientRef: intent.recipient.ref,
      });
      logicalKeys.add(logicalKeyOf(parsed.value));
    }
    if (recipients.size === 0) return undefined;
    return this.deps.gateFacts.read([...recipients.values()], [...logicalKeys]);
  }

  /**
   * Fallback: the logical notification's flow pointer names the one channel that may be active. The next
   * channel is authorized only after the active one definitively failed — never while it is unknown,
   * dispatching or waiting to retry. While the active channel is unknown nothing is parked in the queue:
   * the intent is sealed, and whoever settles the channel (reconciler, evidence, operator) moves the
   * pointer and wakes the seal, so the ledger's sweep sends the next channel.
   */
  private async handleFallback(job: Job): Promise<ChannelOutcome[]> {
    const { intent } = job.valid;
    let flow = await this.deps.ledger.openFlow(job.logicalKey, [...intent.channels]);
    const outcomes: ChannelOutcome[] = [];
    for (;;) {
      const channel = flow.order[flow.activeIndex]!;
      if (!intent.channels.includes(channel)) return outcomes;
      const outcome = await this.deliverChannel(job, channel);
      outcomes.push(outcome);
      const isLast = flow.activeIndex >= flow.order.length - 1;
      if (outcome.action === 'retry_later') return outcomes;
      if (!definitivelyFailed(outcome.state) || isLast) {
        if (!isLast && (outcome.state === 'unknown' || outcome.state === 'quarantined')) {
          const policy = job.valid.policy;
          await this.park(
            job,
            'fallback_waits_for_active',
            this.deps.clock.now() + policy.ambiguityDeadlineSeconds * 1000,
          );
          outcomes[outcomes.length - 1] = { ...outcome, action: 'waiting_for_active_channel' };
        }
        return outcomes;
      }
      const advanced = await this.deps.ledger.advanceFlow(job.logicalKey, flow.activeIndex, flow.version);
      const current = advanced ?? (await this.deps.ledger.getFlow(job.logicalKey));
      if (!current)
        throw new SendproofError('retryable', 'flow_missing', `fallback flow ${job.logicalKey} disappeared`);
      if (current.activeIndex <= flow.activeIndex) {
        // Another worker holds the pointer at a different version; re-read on the next delivery.
        outcomes[outcomes.length - 1] = { ...outcome, action: 'retry_later', dueAt: this.deps.clock.now() };
        return outcomes;
      }
      this.deps.logger.info('fallback advanced', {
        logicalKey: job.logicalKey,
        from: channel,
        to: current.order[current.activeIndex],
      });
      flow = current;
    }
  }

  /** Renders, then runs the phases until the channel has an outcome. */
  private async deliverChannel(job: Job, channel: Channel): Promise<ChannelOutcome> {
    const { intent, policy } = job.valid;
    const key = deriveDedupeKey(identityOf(intent, policy, channel));
    let rendered: RenderedMessage;
    try {
      rendered = this.render(job.valid, channel);
    } catch (error) {
      if (!(error instanceof SendproofError && error.kind === 'permanent')) throw error;
      // The revision is gone or the data no longer renders. An in-flight row of this key must still be
      // settled (its lease and state first), then the refusal is recorded beside it.
      const existing = await this.deps.ledger.get(key.readable);
      if (existing) await this.settleExpiredDispatching(existing);
      await recordInvalidChannel(this.sideRowDeps(), job.valid, channel, key.readable, error);
      this.deps.metrics?.count(METRIC.intentsInvalid);
      return { channel, dedupeKey: key.readable, state: 'invalid', action: 'render_failed' };
    }
    const run: ChannelRun = {
      job,
      channel,
      transport: this.deps.transports[channel],
      rendered,
      hash: contentHash(rendered.content, this.deps.contentHashKey),
      dedupeKey: key.readable,
    };
    let step: Step = { next: 'prepare' };
    try {
      for (;;) {
        if ('done' in step) return step.done;
        step = await this.phase(run, step);
      }
    } catch (error) {
      if (error instanceof LostRace) {
        this.deps.logger.warn('another worker moved the row; leaving it', {
          dedupeKey: run.dedupeKey,
          channel,
        });
        const state = error.current?.state ?? 'claimed';
        return {
          channel,
          dedupeKey: run.dedupeKey,
          state,
          action: isTerminal(state) ? 'already_final' : 'retry_later',
          dueAt: this.deps.clock.now() + this.deps.leaseMs,
        };
      }
      throw error;
    }
  }

  /** Runs one phase and calls the probe at the edge it ends on. */
  private async phase(run: ChannelRun, step: Exclude<Step, { done: ChannelOutcome }>): Promise<Step> {
    const probe = (edge: DispatchEdge, state?: DeliveryState) =>
      this.deps.probe?.(edge, {
        dedupeKey: run.dedupeKey,
        channel: run.channel,
        ...(state ? { state } : {}),
      });
    switch (step.next) {
      case 'prepare': {
        const verdict = await this.preparePhase(run);
        await probe('before_claim');
        return { next: 'claim', verdict };
      }
      case 'claim': {
        const next = await this.claimPhase(run, step.verdict);
        const state = 'done' in next ? next.done.state : 'row' in next ? next.row.state : undefined;
        await probe('after_claim', state);
        // A claim written as `dispatching` is also the dispatching write, and one written in a gate's
        // state is also the gate's write: the same crash edges as on a resumed row.
        if (
          step.verdict.kind === 'dispatch' &&
          'next' in next &&
          (next.next === 'send' || next.next === 'confirm')
        )
          await probe('after_dispatching', state);
        if (step.verdict.kind === 'refuse' && 'done' in next && next.done.state === step.verdict.state)
          await probe('after_gate', state);
        return next;
      }
      case 'gates': {
        const next = await this.gatesPhase(run, step.row);
        if ('done' in next) {
          if (next.done.state !== step.row.state) await probe('after_gate', next.done.state);
        } else await probe('after_dispatching');
        return next;
      }
      case 'confirm': {
        const next = await this.confirmPhase(run, step.row);
        if ('done' in next) await probe('after_gate', next.done.state);
        return next;
      }
      case 'send': {
        const result = await this.send(run, step.row);
        this.deps.admission?.observe(run.transport.name, result);
        run.admitted = false;
        await probe('after_provider');
        return { next: 'record', row: step.row, result };
      }
      case 'record': {
        const next = await this.recordPhase(run, step.row, step.result);
        await probe(
          'after_outcome',
          'done' in next ? next.done.state : 'row' in next ? next.row.state : undefined,
        );
        return next;
      }
      case 'wait': {
        const next = await this.waitPhase(run, step.row, step.delayMs);
        await probe('after_wait');
        return next;
      }
    }
  }

  // ── claim ──────────────────────────────────────────────────────────────────────────────────────────

  /**
   * The read-only gates, before anything is written: expiry, suppression (read once per queue batch when
   * the batch's facts are given), attachment checksums, then expiry once more with no I/O after it, so
   * the claim that follows is the first write and, on the happy path, the only one before the outcome.
   */
  private async preparePhase(run: ChannelRun): Promise<GateVerdict> {
    // A send the ledger schedules is gated at its due time, not at publish (a suppression lifted or a
    // cancel committed in between must count).
    if (this.ledgerSchedules(run, this.deps.clock.now()))
      return { kind: 'schedule', dueAt: run.job.valid.sendAtMs! };
    if (this.expired(run)) return { kind: 'refuse', state: 'expired', why: 'expired_before_dispatch' };
    const suppression = await this.suppressionOf(run);
    if (suppression.suppressed)
      return { kind: 'refuse', state: 'suppressed', why: `suppressed:${suppression.reason ?? 'listed'}` };
    const checksum = await this.fetchAttachments(run);
    if (checksum) return { kind: 'refuse', state: 'blocked', why: checksum };
    const admitted = await this.admit(run);
    if (admitted.kind === 'refuse') return { kind: 'refuse', state: 'blocked', why: admitted.why };
    if (admitted.kind === 'wait') return { kind: 'pace', until: admitted.until };
    run.admitted = true;
    if (this.expired(run)) return { kind: 'refuse', state: 'expired', why: 'expired_before_dispatch' };
    return { kind: 'dispatch' };
  }

  /**
   * One conditional put: the row is created directly in `dispatching` (leased, attempt 1) when every gate
   * passed, or in the state a gate chose; a conflict hands over to the existing row's decision.
   */
  private async claimPhase(run: ChannelRun, verdict: GateVerdict): Promise<Step> {
    const now = this.deps.clock.now();
    const initial = initialStateOf(verdict, run.transport.name, this.ttlFor(run, now));
    const record = buildClaimRecord({
      valid: run.job.valid,
      channel: run.channel,
      contentHash: run.hash,
      templateOwner: run.rendered.owner,
      workerId: this.deps.workerId,
      now,
      leaseMs: this.deps.leaseMs,
      ...(initial ? { initial } : {}),
    });
    const claim = await this.deps.ledger.claim(record);
    if (claim.kind === 'claimed') {
      this.deps.metrics?.count(METRIC.claims);
      if (verdict.kind === 'schedule') return this.done(claim.record, 'scheduled');
      if (verdict.kind === 'dispatch') return this.afterDispatching(run, claim.record);
      if (verdict.kind === 'pace') return this.pace(run, claim.record, verdict.until);
      this.deps.metrics?.count(GATE_METRIC[verdict.state]);
      return this.done(claim.record, verdict.state);
    }
    this.deps.metrics?.count(METRIC.claimConflicts);
    const step = await this.onExisting(run, claim.existing);
    if ('done' in step)
      this.deps.logger.info('claim conflict decided', {
        dedupeKey: run.dedupeKey,
        channel: run.channel,
        state: step.done.state,
        action: step.done.action,
      });
    return step;
  }

  /** A claim conflict never authorizes a send by itself: the existing row decides (lib/domain/resume.ts). */
  private async onExisting(run: ChannelRun, existing: DeliveryRecord): Promise<Step> {
    let row = existing;
    for (let round = 0; round < 2; round += 1) {
      const now = this.deps.clock.now();
      const decision = decideExisting(row, {
        sameContent: row.contentHash === run.hash,
        now,
        replayWindowOpen: replayWindowOpen(row, run.transport, now),
      });
      switch (decision.kind) {
        case 'final':
          return this.done(row, 'already_final');
        case 'busy':
          return this.done(row, 'retry_later', { dueAt: decision.until });
        case 'content_mismatch':
          await recordMismatch(this.sideRowDeps(), row, run.hash, run.job.valid, run.channel);
          this.deps.metrics?.count(METRIC.blocked);
          return {
            done: {
              channel: run.channel,
              dedupeKey: row.pk,
              state: 'blocked',
              action: 'content_mismatch_blocked',
            },
          };
        case 'take_over': {
          const takeover = await this.deps.ledger.transition({
            pk: row.pk,
            from: row.state,
            to: 'claimed',
            expectedVersion: row.version,
            by: this.deps.workerId,
            why: row.state === 'stalled' ? 'stalled_taken_over' : 'lease_takeover',
            ...(row.state === 'claimed' ? { leaseExpiredBefore: now } : {}),
            set: { leaseOwner: this.deps.workerId, leaseUntil: now + this.deps.leaseMs },
            now,
          });
          if (takeover.kind === 'ok') return { next: 'gates', row: takeover.record };
          return this.done(takeover.current ?? row, 'retry_later', { dueAt: now + this.deps.leaseMs });
        }
        case 'mark_unknown': {
          const marked = await this.settleExpiredDispatching(row);
          if (!marked) return this.done(row, 'retry_later', { dueAt: now + this.deps.leaseMs });
          // Decide again on the unknown row: a mismatch is still blocked, an open window still parks.
          const settled = await this.deps.evidence?.applyRecordedEvidence(marked);
          if (settled) return this.done(settled, 'settled_by_recorded_evidence');
          row = marked;
          if (row.contentHash !== run.hash) continue;
          return this.parkForReplay(run, row, 'marked_unknown');
        }
        case 'wait':
          await this.park(run.job, 'retry_wait', decision.until + this.parkGraceMs);
          return this.done(row, 'retry_later', { dueAt: decision.until });
        case 'scheduled':
          // A duplicate publish (or a redelivery) of a scheduled intent: the seal owns it; nothing to do.
          await this.park(run.job, 'scheduled', decision.until);
          return this.done(row, 'scheduled');
        case 'held_by_provider':
          return this.done(row, 'handed_to_provider_schedule');
        case 'resume':
          return { next: 'gates', row };
        case 'leave': {
          if (row.state === 'retry_wait') {
            // Unknown once, and the provider no longer remembers the key: no request may leave.
            const moved = await this.move(row, 'unknown', 'replay_window_closed');
            return this.done(moved, 'left_for_reconciler');
          }
          return this.done(row, 'left_for_reconciler');
        }
      }
    }
    return this.done(row, 'left_for_reconciler');
  }

  /**
   * The one `dispatching → unknown` rule for an expired lease (the reconciler and operator decisions
   * call the ledger the same way). Returns the unknown row, or undefined when another actor moved first.
   */
  private async settleExpiredDispatching(row: DeliveryRecord): Promise<DeliveryRecord | undefined> {
    const now = this.deps.clock.now();
    if (row.state !== 'dispatching' || (row.leaseUntil ?? 0) > now) return undefined;
    const result = await expireDispatchingLease(this.deps.ledger, row, this.deps.workerId, now);
    if (result.kind !== 'ok') return undefined;
    this.deps.metrics?.count(METRIC.unknown);
    return result.record;
  }

  // ── gates ──────────────────────────────────────────────────────────────────────────────────────────

  private async gatesPhase(run: ChannelRun, input: DeliveryRecord): Promise<Step> {
    let row = input;
    const { intent } = run.job.valid;
    const replay = isReplay(row);
    // Gate: expiry, against the current clock (and again below, with no I/O after it).
    const expiredEarly = await this.expireIfDue(run, row);
    if (expiredEarly) return expiredEarly;
    // Gate: suppression list, read again before every retry or resume.
    const suppression = await this.deps.suppressions.isSuppressed(
      intent.tenant,
      intent.recipient.ref,
      run.channel,
    );
    if (suppression.suppressed) {
      // A replay is a question about a send that may have happened: the row stays for the reconciler.
      if (replay) return this.leaveUnknown(row, 'replay_refused:suppressed');
      row = await this.move(row, 'suppressed', `suppressed:${suppression.reason ?? 'listed'}`, {
        ttl: this.ttlFor(run, this.deps.clock.now()),
      });
      this.deps.metrics?.count(METRIC.suppressed);
      return this.done(row, 'suppressed');
    }
    // Gate: attachments by immutable reference, checksum verified before anything leaves.
    const checksum = await this.fetchAttachments(run);
    if (checksum) {
      if (replay) return this.leaveUnknown(row, `replay_refused:${checksum}`);
      row = await this.move(row, 'blocked', checksum, { ttl: this.ttlFor(run, this.deps.clock.now()) });
      this.deps.metrics?.count(METRIC.blocked);
      return this.done(row, 'blocked');
    }
    // Rate control and SMS rules (not for a replay: it asks about a send that may have happened).
    if (!replay && !run.admitted) {
      const admitted = await this.admit(run);
      if (admitted.kind === 'wait') return this.pace(run, row, admitted.until);
      if (admitted.kind === 'refuse') {
        row = await this.move(row, 'blocked', admitted.why, { ttl: this.ttlFor(run, this.deps.clock.now()) });
        this.deps.metrics?.count(METRIC.blocked);
        return this.done(row, 'blocked');
      }
    }
    // Expiry once more, and for a replay the provider's key window, with no I/O left before the write:
    // the reads above can take seconds.
    const expiredLate = await this.expireIfDue(run, row);
    if (expiredLate) return expiredLate;
    const early = await this.holdUntilSendAt(run, row);
    if (early) return early;
    const now = this.deps.clock.now();
    if (replay && !replayWindowOpen(row, run.transport, now)) {
      if (row.state === 'retry_wait') row = await this.move(row, 'unknown', 'replay_window_closed');
      return this.done(row, 'left_for_reconciler');
    }
    // Durable `dispatching` first; only then the provider call. A replay spends no attempt.
    const attempts = replay ? row.attempts : row.attempts + 1;
    const why = replay ? 'replay_under_enforced_key' : attempts === 1 ? 'gates_passed' : 'retry';
    row = await this.move(row, 'dispatching', why, {
      attempts,
      transport: run.transport.name,
      leaseOwner: this.deps.workerId,
      leaseUntil: now + this.deps.leaseMs,
    });
    return this.afterDispatching(run, row);
  }

  /** After the durable `dispatching` write: the cancel gate for cancellable purposes, then the send. */
  private afterDispatching(run: ChannelRun, row: DeliveryRecord): Step {
    return run.job.valid.policy.cancellable ? { next: 'confirm', row } : { next: 'send', row };
  }

  /**
   * A retry of a provider-scheduled send whose sendAt is now too close for the provider's window (a
   * Retry-After ate the lead time): never send early; wait in the ledger until sendAt, then send plainly.
   */
  private async holdUntilSendAt(run: ChannelRun, row: DeliveryRecord): Promise<Step | undefined> {
    const now = this.deps.clock.now();
    const sendAt = run.job.valid.sendAtMs;
    if (row.state !== 'retry_wait' || sendAt === undefined || sendAt <= now || this.providerHolds(run, now))
      return undefined;
    const waiting = await this.move(row, 'retry_wait', 'waits_for_send_at', { nextAttemptAt: sendAt });
    return { next: 'wait', row: waiting, delayMs: sendAt - now };
  }

  // ── confirm ────────────────────────────────────────────────────────────────────────────────────────

  /**
   * The cancel gate, for purposes that declare `cancellable`. It reads the event's cancel marker strongly
   * consistently AFTER the durable `dispatching` write and before the provider call, so the read is the
   * linearization point: a cancel committed before it stops this send (`dispatching → cancelled`, nothing
   * left); a cancel committed after it finds this row already `dispatching` and reports "too late".
   */
  private async confirmPhase(run: ChannelRun, row: DeliveryRecord): Promise<Step> {
    const order = await this.cancelOrderFor(run);
    if (!order) return { next: 'send', row };
    // A replay asks about a send that may already have happened: the row stays for the reconciler.
    if (isReplay(row)) return this.leaveUnknown(row, `replay_refused:cancelled:${order.id}`);
    const cancelled = await this.move(row, 'cancelled', cancelWhy(order, 'marker_read_before_send'), {
      ttl: this.ttlFor(run, this.deps.clock.now()),
    });
    this.deps.metrics?.count(METRIC.cancelled);
    return this.done(cancelled, 'cancelled');
  }

  /** The committed cancel order whose scope covers this channel of this intent, if any. */
  private async cancelOrderFor(run: ChannelRun): Promise<CancelOrder | undefined> {
    const { intent } = run.job.valid;
    const marker = await this.deps.ledger.getCancelMarker(intent.tenant, intent.eventId);
    return marker?.orders.find((o) => cancelCovers(o, intent.purpose, run.channel));
  }

  /** A scheduled send the ledger holds (claimed `scheduled`) rather than the provider. */
  private ledgerSchedules(run: ChannelRun, now: number): boolean {
    const { valid } = run.job;
    if (!isScheduledAhead(valid, now)) return false;
    return !this.providerHolds(run, now);
  }

  /** Provider-side scheduling: the purpose asks for it and the adapter can hold (and, if needed, cancel) it. */
  private providerHolds(run: ChannelRun, now: number): boolean {
    const { valid } = run.job;
    return (
      valid.sendAtMs !== undefined &&
      valid.policy.providerScheduling &&
      providerCanHold(run.transport, valid.sendAtMs, now, valid.policy.cancellable)
    );
  }

  private async admit(run: ChannelRun): Promise<AdmissionVerdict> {
    if (!this.deps.admission) return { kind: 'go' };
    const { intent, policy } = run.job.valid;
    const phone = run.channel === 'sms' ? intent.recipient.phone : undefined;
    return this.deps.admission.admit({
      channel: run.channel,
      policy,
      tenant: intent.tenant,
      transport: run.transport.name,
      ...(phone ? { phone } : {}),
    });
  }

  /** No token: the row waits in `retry_wait` (`paced`), owned by the ledger; its attempts are untouched. */
  private async pace(run: ChannelRun, row: DeliveryRecord, until: number): Promise<Step> {
    const waiting = await this.move(row, 'retry_wait', 'paced', { nextAttemptAt: until });
    await this.park(run.job, 'paced', until + this.parkGraceMs);
    return this.done(waiting, 'retry_later', { dueAt: until });
  }

  private expired(run: ChannelRun): boolean {
    const expiresAt = run.job.valid.expiresAtMs;
    return expiresAt !== undefined && this.deps.clock.now() >= expiresAt;
  }

  /** The batch's suppression facts when they cover this recipient; otherwise one strongly consistent read. */
  private async suppressionOf(run: ChannelRun): Promise<{ suppressed: boolean; reason?: string }> {
    const { intent } = run.job.valid;
    const fromBatch = run.job.facts?.suppression(intent.tenant, intent.recipient.ref, run.channel);
    if (fromBatch) return fromBatch;
    return this.deps.suppressions.isSuppressed(intent.tenant, intent.recipient.ref, run.channel);
  }

  /**
   * Fetches each attachment by immutable reference and verifies its sha256; returns the refusal reason
   * (by position, not file name: a report's file name can carry a patient's name) or nothing.
   */
  private async fetchAttachments(run: ChannelRun): Promise<string | undefined> {
    const { intent } = run.job.valid;
    if (run.channel !== 'email' || !intent.attachments?.length || run.attachments) return undefined;
    const fetched = [];
    for (const [index, ref] of intent.attachments.entries()) {
      const bytes = await this.deps.attachments.fetch(ref.uri);
      if (sha256Hex(bytes) !== ref.sha256) return `attachment_checksum_mismatch:${index + 1}`;
      fetched.push({ filename: ref.filename, contentType: ref.contentType, content: bytes });
    }
    run.attachments = fetched;
    return undefined;
  }

  private async leaveUnknown(row: DeliveryRecord, why: string): Promise<Step> {
    if (row.state === 'unknown') return this.done(row, 'left_for_reconciler');
    const moved = await this.move(row, 'unknown', why);
    return this.done(moved, 'left_for_reconciler');
  }

  /** `expired` when the intent's expiry has passed by the clock now; a replayed row stays for the reconciler. */
  private async expireIfDue(run: ChannelRun, row: DeliveryRecord): Promise<Step | undefined> {
    const now = this.deps.clock.now();
    if (row.expiresAt === undefined || now < row.expiresAt) return undefined;
    if (isReplay(row)) return this.leaveUnknown(row, 'replay_refused:expired');
    const expired = await this.move(row, 'expired', 'expired_before_dispatch', {
      ttl: this.ttlFor(run, now),
    });
    this.deps.metrics?.count(METRIC.expired);
    return this.done(expired, 'expired');
  }

  // ── send ───────────────────────────────────────────────────────────────────────────────────────────

  private async send(run: ChannelRun, row: DeliveryRecord): Promise<SendResult> {
    const { intent } = run.job.valid;
    const { rendered, channel } = run;
    const to = channel === 'email' ? intent.recipient.email : intent.recipient.phone;
    if (!to)
      return {
        kind: 'rejected',
        reason: 'no destination for channel',
        code: 'missing_destination',
        cause: 'recipient',
      };
    const message: OutboundMessage = {
      channel,
      to,
      ...(rendered.content.subject !== undefined ? { subject: rendered.content.subject } : {}),
      text: rendered.content.text,
      ...(rendered.content.html !== undefined ? { html: rendered.content.html } : {}),
      ...(run.attachments ? { attachments: run.attachments } : {}),
      dedupeKey: row.pk,
      ...(run.job.valid.expiresAtMs !== undefined ? { expiresAtMs: run.job.valid.expiresAtMs } : {}),
      tags: { purpose: intent.purpose, tenant: intent.tenant },
      ...(this.providerHolds(run, this.deps.clock.now()) ? { sendAtMs: run.job.valid.sendAtMs! } : {}),
    };
    run.handedAt = message.sendAtMs;
    try {
      return await run.transport.send(message, row.idempotencyKey);
    } catch (error) {
      // An adapter bug or an unexpected throw after the request may have left: never assume it did not.
      return {
        kind: 'ambiguous',
        reason: `transport_threw:${error instanceof Error ? error.name : 'unknown'}`,
      };
    }
  }

  // ── record ─────────────────────────────────────────────────────────────────────────────────────────

  private async recordPhase(run: ChannelRun, row: DeliveryRecord, result: SendResult): Promise<Step> {
    try {
      return await this.recordOutcome(run, row, result);
    } catch (error) {
      if (error instanceof LostRace) return this.applyLateAnswer(run, row, result, error);
      throw error;
    }
  }

  private async recordOutcome(run: ChannelRun, row: DeliveryRecord, result: SendResult): Promise<Step> {
    const now = this.deps.clock.now();
    const attempts = row.attempts;
    if (result.kind === 'accepted' && run.handedAt !== undefined && run.handedAt > now) {
      // Accepted, and held by the provider until sendAt: the sweep settles it then; a cancel may stop it.
      const held = await this.move(row, 'provider_scheduled', `provider_holds_until:${iso(run.handedAt)}`, {
        providerMessageId: result.providerMessageId,
        attempts,
        nextAttemptAt: run.handedAt,
        // Counted from sendAt: the row the sweep settles `accepted` then keeps the purpose's retention.
        ttl: retentionTtl(run.job.valid.policy, run.handedAt),
      });
      await this.park(run.job, 'provider_scheduled', run.handedAt + this.parkGraceMs);
      return this.done(held, 'handed_to_provider_schedule', { providerMessageId: result.providerMessageId });
    }
    if (result.kind === 'accepted') {
      const accepted = await this.move(
        row,
        'accepted',
        result.replayed ? 'provider_replayed_original' : 'provider_accepted',
        { providerMessageId: result.providerMessageId, attempts, ttl: this.ttlFor(run, now) },
      );
      this.deps.metrics?.count(METRIC.accepted);
      return this.done(accepted, 'sent', { providerMessageId: result.providerMessageId });
    }
    if (isReplay(row)) {
      // A replay asked "do you have this key?". Any answer but the original message is evidence, not an
      // outcome: back to unknown, no attempt spent, never rejected. Even `invalid_idempotent_request`
      // proves only that the provider holds the key.
      const detail = result.kind === 'rejected' ? (result.code ?? result.reason) : result.reason;
      const back = await this.move(row, 'unknown', `replay_answer:${result.kind}:${detail}`, { attempts });
      this.deps.metrics?.count(METRIC.unknown);
      const settled = await this.deps.evidence?.applyRecordedEvidence(back);
      if (settled) return this.done(settled, 'settled_by_recorded_evidence');
      const delay = this.delayFor(attempts, result.kind === 'retryable' ? result.retryAfterMs : undefined);
      return this.parkForReplay(run, back, 'marked_unknown', delay);
    }
    switch (result.kind) {
      case 'rejected': {
        const rejected = await this.move(
          row,
          'rejected',
          `provider_rejected:${result.code ?? result.reason}`,
          {
            attempts,
            ttl: this.ttlFor(run, now),
          },
        );
        this.deps.metrics?.count(METRIC.rejected);
        return this.done(rejected, 'rejected_by_provider');
      }
      case 'ambiguous': {
        const unknown = await this.move(row, 'unknown', `ambiguous:${result.reason}`, { attempts });
        this.deps.metrics?.count(METRIC.unknown);
        this.deps.logger.warn('provider outcome unknown; left for reconciliation', {
          dedupeKey: row.pk,
          channel: run.channel,
          reason: result.reason,
        });
        const settled = await this.deps.evidence?.applyRecordedEvidence(unknown);
        if (settled) return this.done(settled, 'settled_by_recorded_evidence');
        return this.parkForReplay(run, unknown, 'marked_unknown');
      }
      case 'retryable': {
        // A hold (a quota, a paused account) is about the transport, not this row: it spends no budget.
        if (attempts >= run.job.valid.policy.maxAttempts && !result.hold) {
          const exhausted = await this.move(row, 'rejected', `retry_budget_exhausted:${result.reason}`, {
            attempts,
            ttl: this.ttlFor(run, now),
          });
          this.deps.metrics?.count(METRIC.rejected);
          return this.done(exhausted, 'retry_budget_exhausted');
        }
        const delayMs = this.delayFor(attempts, result.retryAfterMs);
        const waiting = await this.move(row, 'retry_wait', `retryable:${result.reason}`, {
          attempts,
          nextAttemptAt: now + delayMs,
        });
        this.deps.metrics?.count(METRIC.retries);
        return { next: 'wait', row: waiting, delayMs };
      }
    }
  }

  /**
   * The row moved while the provider answered: a redelivery found the lease expired, or the reconciler
   * or an operator marked it `unknown`. A definite answer for this very attempt is still the truth about
   * it, so it is applied to the unknown row instead of being thrown away. Anything else stays as it is.
   */
  private async applyLateAnswer(
    run: ChannelRun,
    ours: DeliveryRecord,
    result: SendResult,
    lost: LostRace,
  ): Promise<Step> {
    const current = lost.current ?? (await this.deps.ledger.get(ours.pk));
    const definite = result.kind === 'accepted' || (result.kind === 'rejected' && !isReplay(ours));
    if (current?.state !== 'unknown' || current.attempts !== ours.attempts || !definite) throw lost;
    const now = this.deps.clock.now();
    const settled =
      result.kind === 'accepted'
        ? await this.move(current, 'accepted', 'late_provider_answer', {
            providerMessageId: result.providerMessageId,
            ttl: this.ttlFor(run, now),
          })
        : await this.move(
            current,
            'rejected',
            `late_provider_answer:${result.kind === 'rejected' ? (result.code ?? result.reason) : ''}`,
            {
              ttl: this.ttlFor(run, now),
            },
          );
    this.deps.metrics?.count(result.kind === 'accepted' ? METRIC.accepted : METRIC.rejected);
    this.deps.logger.info('late provider answer applied to an unknown row', {
      dedupeKey: ours.pk,
      channel: run.channel,
      state: settled.state,
    });
    return this.done(settled, 'late_answer_applied', {
      ...(result.kind === 'accepted' ? { providerMessageId: result.providerMessageId } : {}),
    });
  }

  // ── wait ───────────────────────────────────────────────────────────────────────────────────────────

  /** A short wait is slept here; a long one is parked: sealed, and the message comes back when due. */
  private async waitPhase(run: ChannelRun, row: DeliveryRecord, delayMs: number): Promise<Step> {
    if (delayMs > this.inlineRetryBudgetMs) {
      const dueAt = row.nextAttemptAt ?? this.deps.clock.now() + delayMs;
      await this.park(run.job, 'retry_wait', dueAt + this.parkGraceMs);
      return this.done(row, 'retry_later', { dueAt });
    }
    await this.sleep(delayMs);
    // Every gate is evaluated again before the next attempt, with the same key and content.
    return { next: 'gates', row };
  }

  /**
   * An unknown row whose provider enforces the key: seal the intent and bring the message back after a
   * back-off to ask again. Without a replay window the reconciler and evidence settle it.
   */
  private async parkForReplay(
    run: ChannelRun,
    row: DeliveryRecord,
    action: 'marked_unknown',
    delayMs = this.delayFor(row.attempts),
  ): Promise<Step> {
    const now = this.deps.clock.now();
    if (!replayWindowOpen(row, run.transport, now)) return this.done(row, action);
    const dueAt = now + delayMs;
    await this.park(run.job, 'replay', dueAt + this.parkGraceMs);
    return this.done(row, 'retry_later', { dueAt });
  }

  private delayFor(attempt: number, retryAfterMs?: number): number {
    return nextDelayMs({
      attempt: Math.max(1, attempt),
      baseMs: this.backoff.baseMs,
      capMs: this.backoff.capMs,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      random: this.random,
    });
  }

  // ── sealing ────────────────────────────────────────────────────────────────────────────────────────

  /**
   * Hands the intent to the ledger: sealed with the AWS Encryption SDK (the logical key is the encryption
   * context), in the attention index's `parked` partition, due when the sweep must look again. Once per
   * handling; later parks only move the due time. TTL: the intent's expiry or the purpose's retention.
   */
  private async park(job: Job, reason: string, dueAt: number): Promise<void> {
    if (job.sealed) {
      await this.deps.ledger.rearm(job.logicalKey, dueAt, reason);
      return;
    }
    const now = this.deps.clock.now();
    const { intent, policy } = job.valid;
    const retention = retentionTtl(policy, now);
    const ttl =
      job.valid.expiresAtMs !== undefined
        ? Math.min(retention, Math.ceil(job.valid.expiresAtMs / 1000))
        : retention;
    await this.deps.ledger.park({
      logicalKey: job.logicalKey,
      rows: intent.channels.map((channel) => ({
        channel,
        dedupeKey: deriveDedupeKey(identityOf(intent, policy, channel)).readable,
      })),
      fallback: job.valid.delivery === 'fallback',
      purpose: intent.purpose,
      tenant: intent.tenant,
      ciphertext: await this.deps.sealer.seal(job.body, job.logicalKey),
      reason,
      dueAt,
      createdAt: now,
      ...(job.valid.sendAtMs !== undefined ? { notBefore: job.valid.sendAtMs } : {}),
      ttl,
    });
    job.sealed = true;
  }

  /** A resume message names a sealed intent; without one there is nothing to send (the sweep says why). */
  private async unseal(logicalKey: string): Promise<string | undefined> {
    const seal = await this.deps.ledger.getSeal(logicalKey);
    if (!seal) {
      this.deps.logger.warn('resume for a notification with nothing sealed; left to the sweep', {
        logicalKey,
      });
      return undefined;
    }
    return this.deps.sealer.open(seal.ciphertext, logicalKey);
  }

  // ── small pieces ───────────────────────────────────────────────────────────────────────────────────

  private render(valid: ValidIntent, channel: Channel): RenderedMessage {
    const { intent } = valid;
    return this.deps.renderer.render({
      templateId: intent.template.id,
      revision: intent.template.revision,
      channel,
      ...(intent.locale ? { locale: intent.locale } : {}),
      data: intent.data ?? {},
      secrets: intent.secrets ?? {},
      ...(channel === 'email' && intent.attachments
        ? {
            attachments: intent.attachments.map((a) => ({
              filename: a.filename,
              contentType: a.contentType,
              sha256: a.sha256,
            })),
          }
        : {}),
    });
  }

  /**
   * One conditioned transition; a refusal means another worker owns the row now. `why` is a short
   * machine-readable phrase, bounded by the one rule (lib/ledger/why.ts).
   */
  private async move(
    row: DeliveryRecord,
    to: DeliveryState,
    why: string,
    set: TransitionRequest['set'] = {},
  ): Promise<DeliveryRecord> {
    const result = await this.deps.ledger.transition({
      pk: row.pk,
      from: row.state,
      to,
      expectedVersion: row.version,
      by: this.deps.workerId,
      why: boundWhy(why),
      set,
      now: this.deps.clock.now(),
    });
    if (result.kind !== 'ok') throw new LostRace(row.pk, result.current);
    return result.record;
  }

  private done(
    row: DeliveryRecord,
    action: ChannelAction,
    extra: { providerMessageId?: string; dueAt?: number } = {},
  ): Step {
    return { done: { channel: row.channel, dedupeKey: row.pk, state: row.state, action, ...extra } };
  }

  private ttlFor(run: ChannelRun, now: number): number {
    return retentionTtl(run.job.valid.policy, now);
  }

  private sideRowDeps() {
    return {
      ledger: this.deps.ledger,
      clock: this.deps.clock,
      workerId: this.deps.workerId,
      contentHashKey: this.deps.contentHashKey,
      logger: this.deps.logger,
    };
  }
}

/**
 * An operator's resend of a sealed notification: the same intent, one channel, linked to the old row by
 * `resendOf` (so its key is new: `…:resend=<decisionId>`). The intent schema validates it as usual.
 */
const asResend = (body: string, order: ResendOrder): string => {
  const raw = JSON.parse(body) as Record<string, unknown>;
  return JSON.stringify({
    ...raw,
    channels: [order.channel],
    delivery: 'all',
    resendOf: { dedupeKey: order.dedupeKey, decisionId: order.decisionId },
  });
};

/** The state a fresh claim is written in, from the read-only gates' verdict. */
const initialStateOf = (verdict: GateVerdict, transport: string, ttl: number): ClaimInitial | undefined => {
  switch (verdict.kind) {
    case 'pace':
      // Claimed (leased), then moved to `retry_wait` (paced): the claim is the dedupe, the wait spends nothing.
      return undefined;
    case 'dispatch':
      return { state: 'dispatching', why: 'gates_passed', transport };
    case 'schedule':
      return { state: 'scheduled', why: `scheduled_for:${iso(verdict.dueAt)}`, dueAt: verdict.dueAt };
    case 'refuse':
      return { state: verdict.state, why: verdict.why, ttl };
  }
};

/** Scheduled, and not yet due at `now`. */
const isScheduledAhead = (valid: ValidIntent, now: number): boolean =>
  valid.sendAtMs !== undefined && valid.sendAtMs > now;

const iso = (ms: number): string => new Date(ms).toISOString();

/** The logical notification (every channel of one intent): the fallback flow's and the seal's key. */
export const logicalKeyOf = (valid: ValidIntent): string => {
  const { intent, policy } = valid;
  const { channel: _c, ...logical } = identityOf(intent, policy, intent.channels[0]!);
  return deriveLogicalKey(logical);
};
