import { createHash } from 'node:crypto';
import type { AttachmentStore } from '../attachments/AttachmentStore.js';
import { sha256Hex } from '../attachments/AttachmentStore.js';
import { nextDelayMs } from '../domain/backoff.js';
import type { Clock } from '../domain/clock.js';
import { contentHash } from '../domain/content.js';
import { SendproofError } from '../domain/errors.js';
import { parseIntent, type ValidIntent } from '../domain/intent.js';
import { deriveDedupeKey, deriveLogicalKey, identityOf } from '../domain/keys.js';
import { type Channel, type PurposeRegistry, retentionTtl } from '../domain/purposes.js';
import { replayWindowOpen } from '../domain/replay.js';
import { DEFINITIVE_FAILURES, type DeliveryState, isTerminal } from '../domain/states.js';
import type { RecordedEvidence } from '../evidence/EvidenceRecorder.js';
import type { DeliveryRecord, Ledger, SuppressionList, TransitionRequest } from '../ledger/port.js';
import { METRIC } from '../observability.js';
import type { RenderedMessage, TemplateRenderer } from '../templates/port.js';
import type { OutboundMessage, SendResult, Transport } from '../transports/port.js';
import { buildClaimRecord } from './claimRecord.js';

/**
 * The named edges of one dispatch. Crash tests stop the worker at each of them; in production the probe
 * is absent. The names are the documentation of the phases:
 *
 *   before_claim ─► [claim put] ─► after_claim ─► gates ─► [→ dispatching] ─► after_dispatching
 *        ─► [provider call] ─► after_provider ─► [→ outcome] ─► after_outcome
 */
export type DispatchEdge =
  | 'before_claim'
  | 'after_claim'
  | 'after_dispatching'
  | 'after_provider'
  | 'after_outcome';
export type EdgeProbe = (
  edge: DispatchEdge,
  context: { dedupeKey: string; channel: Channel },
) => void | Promise<void>;

export interface DispatchLogger {
  info(message: string, ...extra: Array<Record<string, unknown>>): void;
  warn(message: string, ...extra: Array<Record<string, unknown>>): void;
  error(message: string, ...extra: Array<Record<string, unknown>>): void;
}

export interface MetricsSink {
  count(name: string, value?: number): void;
}

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
  workerId: string;
  leaseMs: number;
  /** Longest wait spent retrying inside one invocation; a longer Retry-After goes back to the queue. */
  inlineRetryBudgetMs?: number;
  backoff?: { baseMs: number; capMs: number };
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  logger: DispatchLogger;
  metrics?: MetricsSink;
  probe?: EdgeProbe;
  /** Settles a row that just became `unknown` from provider events recorded earlier (lib/evidence). */
  evidence?: RecordedEvidence;
}

/** Where one channel of an intent ended up after this delivery of the message. */
export interface ChannelOutcome {
  channel: Channel;
  dedupeKey: string;
  state: DeliveryState;
  /** What this worker did: sent, left it alone, found it done, … */
  action: string;
  providerMessageId?: string;
}

/**
 * - `done`: nothing more will happen for this queue message; acknowledge it.
 * - `retry_later`: the message must come back (a live lease elsewhere, a Retry-After beyond the inline
 *   budget, a fallback waiting on an unknown outcome); the SQS handler reports it as a batch item failure.
 */
export interface IntentOutcome {
  disposition: 'done' | 'retry_later';
  channels: ChannelOutcome[];
  invalid?: { issues: Array<{ field: string; message: string }> };
}

export interface QueueEnvelope {
  messageId: string;
  receiveCount?: number;
}

/** Thrown when a transition this worker expected to make was refused because another worker moved first. */
class LostRace extends SendproofError {
  constructor(pk: string) {
    super('retryable', 'lost_race', `row ${pk} moved under this worker`);
  }
}

const DEFAULT_BACKOFF = { baseMs: 200, capMs: 5_000 };
const MAX_WHY = 120;

/**
 * The dispatcher: from one queue message to provider calls and honest ledger outcomes.
 * Order of gates before any provider call: fallback pointer (which channel may be active at all) →
 * claim (with the content hash) → expiry → suppression → attachment checksums → expiry again →
 * durable `dispatching` → provider.
 */
export class Dispatcher {
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly inlineRetryBudgetMs: number;
  private readonly backoff: { baseMs: number; capMs: number };

  constructor(private readonly deps: DispatcherDeps) {
    this.sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.random = deps.random ?? Math.random;
    this.inlineRetryBudgetMs = deps.inlineRetryBudgetMs ?? 10_000;
    this.backoff = deps.backoff ?? DEFAULT_BACKOFF;
  }

  /** Handles one queue message body. Throws only for infrastructure failures (the message will come back). */
  async handle(body: string, envelope: QueueEnvelope): Promise<IntentOutcome> {
    const parsed = parseIntent(body, {
      purposes: this.deps.purposes,
      clock: this.deps.clock,
      allowExpired: true,
    });
    if (!parsed.ok) {
      await this.recordInvalid(body, envelope, parsed.error.issues);
      return { disposition: 'done', channels: [], invalid: { issues: parsed.error.issues } };
    }
    const valid = parsed.value;
    if (valid.delivery === 'fallback') return this.handleFallback(valid);
    const channels = await Promise.all(
      valid.intent.channels.map((channel) => this.deliverChannel(valid, channel)),
    );
    return {
      disposition: channels.some((c) => c.action === 'retry_later') ? 'retry_later' : 'done',
      channels,
    };
  }

  /**
   * Fallback: the logical notification's flow pointer names the one channel that may be active. The next
   * channel is authorized only after the active one is definitively failed — never while it is unknown,
   * dispatching or waiting to retry. While the active channel is unknown the message is parked (it comes
   * back from the queue) so that reconciliation can still lead to the next channel.
   */
  private async handleFallback(valid: ValidIntent): Promise<IntentOutcome> {
    const { intent, policy } = valid;
    const { channel: _c, ...logical } = identityOf(intent, policy, intent.channels[0]!);
    const logicalKey = deriveLogicalKey(logical);
    let flow = await this.deps.ledger.openFlow(logicalKey, [...intent.channels]);
    const outcomes: ChannelOutcome[] = [];
    for (;;) {
      const channel = flow.order[flow.activeIndex]!;
      const outcome = await this.deliverChannel(valid, channel);
      outcomes.push(outcome);
      const isLast = flow.activeIndex >= flow.order.length - 1;
      if (outcome.action === 'retry_later') return { disposition: 'retry_later', channels: outcomes };
      if (!DEFINITIVE_FAILURES.includes(outcome.state) || isLast) {
        // Unknown on a channel that still has a fallback: park the message; the answer may authorize the next.
        const parked = !isLast && (outcome.state === 'unknown' || outcome.state === 'quarantined');
        return { disposition: parked ? 'retry_later' : 'done', channels: outcomes };
      }
      const advanced = await this.deps.ledger.advanceFlow(logicalKey, flow.activeIndex, flow.version);
      const current = advanced ?? (await this.deps.ledger.getFlow(logicalKey));
      if (!current) throw new Error(`fallback flow ${logicalKey} disappeared`);
      if (current.activeIndex <= flow.activeIndex) {
        // Another worker holds the pointer at a different version; re-read on the next delivery.
        return { disposition: 'retry_later', channels: outcomes };
      }
      this.deps.logger.info('fallback advanced', {
        logicalKey,
        from: channel,
        to: current.order[current.activeIndex],
      });
      flow = current;
    }
  }

  private async deliverChannel(valid: ValidIntent, channel: Channel): Promise<ChannelOutcome> {
    const { intent, policy } = valid;
    const key = deriveDedupeKey(identityOf(intent, policy, channel));
    const log = { dedupeKey: key.readable, channel, purpose: intent.purpose, eventId: intent.eventId };
    let rendered: RenderedMessage;
    try {
      rendered = this.deps.renderer.render({
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
    } catch (error) {
      if (error instanceof SendproofError && error.kind === 'permanent') {
        await this.recordInvalidChannel(valid, channel, key.readable, error);
        return { channel, dedupeKey: key.readable, state: 'invalid', action: 'render_failed' };
      }
      throw error;
    }
    const hash = contentHash(rendered.content, this.deps.contentHashKey);
    await this.deps.probe?.('before_claim', { dedupeKey: key.readable, channel });
    const now = this.deps.clock.now();
    const claim = await this.deps.ledger.claim(
      buildClaimRecord({
        valid,
        channel,
        contentHash: hash,
        templateOwner: rendered.owner,
        workerId: this.deps.workerId,
        now,
        leaseMs: this.deps.leaseMs,
      }),
    );
    let row: DeliveryRecord;
    if (claim.kind === 'claimed') {
      this.deps.metrics?.count(METRIC.claims);
      row = claim.record;
    } else {
      this.deps.metrics?.count(METRIC.claimConflicts);
      const decided = await this.onConflict(claim.existing, hash, valid, channel);
      if ('outcome' in decided) {
        this.deps.logger.info('claim conflict decided', {
          ...log,
          state: decided.outcome.state,
          action: decided.outcome.action,
        });
        return decided.outcome;
      }
      row = decided.row;
    }
    await this.deps.probe?.('after_claim', { dedupeKey: key.readable, channel });
    try {
      return await this.runGatesAndSend(row, valid, channel, rendered);
    } catch (error) {
      if (error instanceof LostRace) {
        this.deps.logger.warn('another worker moved the row; leaving it', log);
        return { channel, dedupeKey: key.readable, state: row.state, action: 'retry_later' };
      }
      throw error;
    }
  }

  /**
   * A claim conflict never authorizes a send by itself. The existing row decides:
   * different content → blocked record; terminal → done; unknown/quarantined → the reconciler's;
   * live lease elsewhere → come back later; expired lease on claimed → take over (nothing was sent);
   * expired lease on dispatching → unknown (something may have been sent); due retry_wait → resume.
   */
  private async onConflict(
    existing: DeliveryRecord,
    hash: string,
    valid: ValidIntent,
    channel: Channel,
  ): Promise<{ outcome: ChannelOutcome } | { row: DeliveryRecord }> {
    const now = this.deps.clock.now();
    const base = { channel, dedupeKey: existing.pk };
    if (existing.contentHash !== hash) {
      await this.recordBlocked(existing, hash, valid, channel);
      this.deps.metrics?.count(METRIC.blocked);
      return { outcome: { ...base, state: 'blocked', action: 'content_mismatch_blocked' } };
    }
    if (isTerminal(existing.state))
      return { outcome: { ...base, state: existing.state, action: 'already_final' } };
    switch (existing.state) {
      case 'unknown':
        // Only a provider that enforces the key may see this request again: it answers with the original.
        if (replayWindowOpen(existing, this.deps.transports[channel], now)) return { row: existing };
        return { outcome: { ...base, state: existing.state, action: 'left_for_reconciler' } };
      case 'quarantined':
        return { outcome: { ...base, state: existing.state, action: 'left_for_reconciler' } };
      case 'claimed': {
        if ((existing.leaseUntil ?? 0) > now)
          return { outcome: { ...base, state: 'claimed', action: 'retry_later' } };
        const takeover = await this.deps.ledger.transition({
          pk: existing.pk,
          from: 'claimed',
          to: 'claimed',
          expectedVersion: existing.version,
          by: this.deps.workerId,
          why: 'lease_takeover',
          leaseExpiredBefore: now,
          set: { leaseOwner: this.deps.workerId, leaseUntil: now + this.deps.leaseMs },
          now,
        });
        if (takeover.kind === 'ok') return { row: takeover.record };
        return { outcome: { ...base, state: takeover.current?.state ?? 'claimed', action: 'retry_later' } };
      }
      case 'dispatching': {
        if ((existing.leaseUntil ?? 0) > now)
          return { outcome: { ...base, state: 'dispatching', action: 'retry_later' } };
        const result = await this.deps.ledger.transition({
          pk: existing.pk,
          from: 'dispatching',
          to: 'unknown',
          expectedVersion: existing.version,
          by: this.deps.workerId,
          why: 'dispatching_lease_expired',
          leaseExpiredBefore: now,
          now,
        });
        if (result.kind !== 'ok') {
          return {
            outcome: { ...base, state: result.current?.state ?? 'dispatching', action: 'retry_later' },
          };
        }
        this.deps.metrics?.count(METRIC.unknown);
        const settled = await this.deps.evidence?.applyRecordedEvidence(result.record);
        if (settled) return { outcome: this.outcome(settled, 'settled_by_recorded_evidence') };
        // Park the message while a key-enforced replay is still possible; the next delivery replays.
        const park = replayWindowOpen(result.record, this.deps.transports[channel], now);
        return { outcome: { ...base, state: 'unknown', action: park ? 'retry_later' : 'marked_unknown' } };
      }
      case 'retry_wait': {
        if ((existing.nextAttemptAt ?? 0) > now)
          return { outcome: { ...base, state: 'retry_wait', action: 'retry_later' } };
        return { row: existing };
      }
      default:
        return { outcome: { ...base, state: existing.state, action: 'retry_later' } };
    }
  }

  private async runGatesAndSend(
    row: DeliveryRecord,
    valid: ValidIntent,
    channel: Channel,
    rendered: RenderedMessage,
  ): Promise<ChannelOutcome> {
    const { intent, policy } = valid;
    const transport = this.deps.transports[channel];
    let attachments: OutboundMessage['attachments'];
    for (;;) {
      const now = this.deps.clock.now();
      // Gate: expiry, against the current clock, before every attempt (and again below).
      const expiredEarly = await this.expireIfDue(row, valid);
      if (expiredEarly) return expiredEarly;
      // Gate: suppression list.
      const suppression = await this.deps.suppressions.isSuppressed(
        intent.tenant,
        intent.recipient.ref,
        channel,
      );
      if (suppression.suppressed) {
        // A replay of an unknown row is only for a message still allowed; unknown never becomes
        // suppressed by itself, it stays for the reconciler.
        if (row.state === 'unknown') return this.outcome(row, 'left_for_reconciler');
        row = await this.move(row, 'suppressed', `suppressed:${suppression.reason ?? 'listed'}`, {
          ttl: this.ttlFor(valid, now),
        });
        this.deps.metrics?.count(METRIC.suppressed);
        return this.outcome(row, 'suppressed');
      }
      // Gate: attachments by immutable reference, checksum verified before anything leaves.
      if (channel === 'email' && intent.attachments?.length && !attachments) {
        const fetched = [];
        for (const [index, ref] of intent.attachments.entries()) {
          const bytes = await this.deps.attachments.fetch(ref.uri);
          if (sha256Hex(bytes) !== ref.sha256) {
            // By position, not file name: a report's file name can carry a patient's name.
            row = await this.move(row, 'blocked', `attachment_checksum_mismatch:${index + 1}`, {
              ttl: this.ttlFor(valid, now),
            });
            this.deps.metrics?.count(METRIC.blocked);
            return this.outcome(row, 'blocked');
          }
          fetched.push({ filename: ref.filename, contentType: ref.contentType, content: bytes });
        }
        attachments = fetched;
      }
      // Expiry once more with no I/O left before the dispatching write: the suppression read and the
      // attachment fetches above can take seconds, and an expired reset must not leave.
      const expiredLate = await this.expireIfDue(row, valid);
      if (expiredLate) return expiredLate;
      // Durable `dispatching` first; only then the provider call.
      const attempt = row.attempts + 1;
      const why =
        row.state === 'unknown' ? 'replay_under_enforced_key' : attempt === 1 ? 'gates_passed' : 'retry';
      row = await this.move(row, 'dispatching', why, {
        attempts: attempt,
        transport: transport.name,
        leaseOwner: this.deps.workerId,
        leaseUntil: this.deps.clock.now() + this.deps.leaseMs,
      });
      await this.deps.probe?.('after_dispatching', { dedupeKey: row.pk, channel });
      const result = await this.send(transport, row, valid, channel, rendered, attachments);
      await this.deps.probe?.('after_provider', { dedupeKey: row.pk, channel });
      const after = this.deps.clock.now();
      switch (result.kind) {
        case 'accepted':
          row = await this.move(
            row,
            'accepted',
            result.replayed ? 'provider_replayed_original' : 'provider_accepted',
            {
              providerMessageId: result.providerMessageId,
              attempts: attempt,
              ttl: this.ttlFor(valid, after),
            },
          );
          this.deps.metrics?.count(METRIC.accepted);
          await this.deps.probe?.('after_outcome', { dedupeKey: row.pk, channel });
          return this.outcome(row, 'sent', result.providerMessageId);
        case 'rejected':
          row = await this.move(row, 'rejected', `provider_rejected:${result.code ?? result.reason}`, {
            attempts: attempt,
            ttl: this.ttlFor(valid, after),
          });
          this.deps.metrics?.count(METRIC.rejected);
          await this.deps.probe?.('after_outcome', { dedupeKey: row.pk, channel });
          return this.outcome(row, 'rejected_by_provider');
        case 'ambiguous':
          row = await this.move(row, 'unknown', `ambiguous:${result.reason}`, {
            attempts: attempt,
          });
          this.deps.metrics?.count(METRIC.unknown);
          this.deps.logger.warn('provider outcome unknown; left for reconciliation', {
            dedupeKey: row.pk,
            channel,
            reason: result.reason,
          });
          await this.deps.probe?.('after_outcome', { dedupeKey: row.pk, channel });
          {
            const settled = await this.deps.evidence?.applyRecordedEvidence(row);
            if (settled) return this.outcome(settled, 'settled_by_recorded_evidence');
          }
          // With an enforced key the message is parked: its next delivery replays under the same key.
          return this.outcome(
            row,
            replayWindowOpen(row, transport, after) ? 'retry_later' : 'marked_unknown',
          );
        case 'retryable': {
          if (attempt >= policy.maxAttempts) {
            row = await this.move(row, 'rejected', `retry_budget_exhausted:${result.reason}`, {
              attempts: attempt,
              ttl: this.ttlFor(valid, after),
            });
            this.deps.metrics?.count(METRIC.rejected);
            return this.outcome(row, 'retry_budget_exhausted');
          }
          const delay = nextDelayMs({
            attempt,
            baseMs: this.backoff.baseMs,
            capMs: this.backoff.capMs,
            ...(result.retryAfterMs !== undefined ? { retryAfterMs: result.retryAfterMs } : {}),
            random: this.random,
          });
          row = await this.move(row, 'retry_wait', `retryable:${result.reason}`, {
            attempts: attempt,
            nextAttemptAt: after + delay,
          });
          this.deps.metrics?.count(METRIC.retries);
          if (delay > this.inlineRetryBudgetMs) return this.outcome(row, 'retry_later');
          await this.sleep(delay);
          // Loop: every gate is evaluated again before the next attempt, with the same key and content.
          continue;
        }
      }
    }
  }

  private async send(
    transport: Transport,
    row: DeliveryRecord,
    valid: ValidIntent,
    channel: Channel,
    rendered: RenderedMessage,
    attachments: OutboundMessage['attachments'],
  ): Promise<SendResult> {
    const { intent } = valid;
    const to = channel === 'email' ? intent.recipient.email : intent.recipient.phone;
    if (!to) return { kind: 'rejected', reason: 'no destination for channel', code: 'missing_destination' };
    const message: OutboundMessage = {
      channel,
      to,
      ...(rendered.content.subject !== undefined ? { subject: rendered.content.subject } : {}),
      text: rendered.content.text,
      ...(rendered.content.html !== undefined ? { html: rendered.content.html } : {}),
      ...(attachments ? { attachments } : {}),
      dedupeKey: row.pk,
      ...(valid.expiresAtMs !== undefined ? { expiresAtMs: valid.expiresAtMs } : {}),
      tags: { purpose: intent.purpose, tenant: intent.tenant },
    };
    try {
      return await transport.send(message, row.idempotencyKey);
    } catch (error) {
      // An adapter bug or an unexpected throw after the request may have left: never assume it did not.
      return {
        kind: 'ambiguous',
        reason: `transport_threw:${error instanceof Error ? error.name : 'unknown'}`,
      };
    }
  }

  /**
   * One conditioned transition; a refusal means another worker owns the row now. `why` is a short
   * machine-readable phrase and is bounded here, once, so no caller can bloat the 1 KB row.
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
      why: why.slice(0, MAX_WHY),
      set,
      now: this.deps.clock.now(),
    });
    if (result.kind !== 'ok') throw new LostRace(row.pk);
    return result.record;
  }

  private outcome(row: DeliveryRecord, action: string, providerMessageId?: string): ChannelOutcome {
    return {
      channel: row.channel,
      dedupeKey: row.pk,
      state: row.state,
      action,
      ...(providerMessageId ? { providerMessageId } : {}),
    };
  }

  /** `expired` when the intent's expiry has passed by the clock now; an `unknown` row is left as it is. */
  private async expireIfDue(row: DeliveryRecord, valid: ValidIntent): Promise<ChannelOutcome | undefined> {
    const now = this.deps.clock.now();
    if (row.expiresAt === undefined || now < row.expiresAt) return undefined;
    if (row.state === 'unknown') return this.outcome(row, 'left_for_reconciler');
    const expired = await this.move(row, 'expired', 'expired_before_dispatch', {
      ttl: this.ttlFor(valid, now),
    });
    this.deps.metrics?.count(METRIC.expired);
    return this.outcome(expired, 'expired');
  }

  private ttlFor(valid: ValidIntent, now: number): number {
    return retentionTtl(valid.policy, now);
  }

  /**
   * The identity fields of a row that records a refusal next to the delivery row (a blocked content
   * mismatch, an unrenderable intent). It holds no lease: nothing will ever be dispatched from it.
   */
  private sideRow(
    valid: ValidIntent,
    channel: Channel,
    hash: string,
    owner: DeliveryRecord['templateOwner'],
    now: number,
  ) {
    const {
      leaseOwner: _o,
      leaseUntil: _u,
      ...rest
    } = buildClaimRecord({
      valid,
      channel,
      contentHash: hash,
      templateOwner: owner,
      workerId: this.deps.workerId,
      now,
      leaseMs: 0,
    });
    return rest;
  }

  /** Same identity, different content: the mismatch is recorded as its own row and nothing is sent. */
  private async recordBlocked(existing: DeliveryRecord, hash: string, valid: ValidIntent, channel: Channel) {
    const now = this.deps.clock.now();
    await this.deps.ledger.claim({
      ...this.sideRow(valid, channel, hash, existing.templateOwner, now),
      pk: `${existing.pk}#blocked#${hash.slice(3, 19)}`,
      kind: 'blocked',
      state: 'blocked',
      blockedAgainst: existing.pk,
      ttl: this.ttlFor(valid, now),
      history: [{ s: 'blocked', at: now, by: this.deps.workerId, why: 'content_mismatch' }],
    });
    this.deps.logger.warn('content mismatch blocked', {
      dedupeKey: existing.pk,
      channel,
      storedHash: existing.contentHash,
      offeredHash: hash,
    });
  }

  /** A message that failed the boundary: recorded where an operator sees it, never retried. */
  private async recordInvalid(
    body: string,
    envelope: QueueEnvelope,
    issues: Array<{ field: string; message: string }>,
  ) {
    const now = this.deps.clock.now();
    const bodySha256 = createHash('sha256').update(body).digest('hex');
    const hints = safeHints(body);
    await this.deps.ledger.claim({
      pk: `invalid#${bodySha256.slice(0, 32)}`,
      kind: 'invalid',
      idempotencyKey: bodySha256,
      state: 'invalid',
      version: 1,
      tenant: hints.tenant ?? '-',
      purpose: hints.purpose ?? '-',
      eventId: hints.eventId ?? '-',
      recipientRef: '-',
      channel: 'email',
      logicalKey: '-',
      contentHash: '-',
      policyVersion: '-',
      templateId: '-',
      templateRevision: '-',
      templateOwner: 'application',
      attempts: 0,
      createdAt: now,
      updatedAt: now,
      issues,
      history: [{ s: 'invalid', at: now, by: this.deps.workerId, why: `schema:${envelope.messageId}` }],
    });
    this.deps.metrics?.count(METRIC.intentsInvalid);
    this.deps.logger.warn('invalid intent recorded', {
      sqsMessageId: envelope.messageId,
      bodySha256,
      issues,
    });
  }

  private async recordInvalidChannel(
    valid: ValidIntent,
    channel: Channel,
    dedupeKey: string,
    error: SendproofError,
  ) {
    const now = this.deps.clock.now();
    await this.deps.ledger.claim({
      ...this.sideRow(valid, channel, '-', 'application', now),
      pk: `invalid#${dedupeKey}`,
      kind: 'invalid',
      state: 'invalid',
      issues: [{ field: 'template', message: error.message.slice(0, 200) }],
      history: [{ s: 'invalid', at: now, by: this.deps.workerId, why: `render:${error.code}` }],
    });
    this.deps.metrics?.count(METRIC.intentsInvalid);
    this.deps.logger.warn('intent could not be rendered', { dedupeKey, channel, code: error.code });
  }
}

/** No `@` or `+`: a hint that could be an email address or a phone number is not kept. */
const HINT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Identifiers an operator can search by, taken from an invalid body only when they are well-formed and
 * cannot be an address.
 */
const safeHints = (body: string): { tenant?: string; purpose?: string; eventId?: string } => {
  try {
    const value = JSON.parse(body) as Record<string, unknown>;
    const pick = (v: unknown) => (typeof v === 'string' && HINT.test(v) ? v : undefined);
    const hints: { tenant?: string; purpose?: string; eventId?: string } = {};
    const tenant = pick(value.tenant);
    const purpose = pick(value.purpose);
    const eventId = pick(value.eventId);
    if (tenant) hints.tenant = tenant;
    if (purpose) hints.purpose = purpose;
    if (eventId) hints.eventId = eventId;
    return hints;
  } catch {
    return {};
  }
};
