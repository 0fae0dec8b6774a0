import { randomBytes } from 'node:crypto';
import { resumeMessage } from '../dispatch/queueMessage.js';
import type { Clock } from '../domain/clock.js';
import { SendproofError } from '../domain/errors.js';
import { IdentifierSchema, type Intent, parseIntent } from '../domain/intent.js';
import { deriveDedupeKey, identityOf, type MessageIdentity, parseDedupeKey } from '../domain/keys.js';
import type { PurposeRegistry } from '../domain/purposes.js';
import { retentionTtl } from '../domain/purposes.js';
import { continueFallback } from '../ledger/flows.js';
import { expireDispatchingLease } from '../ledger/leases.js';
import type { DeliveryRecord, Ledger } from '../ledger/port.js';
import { boundWhy, DECISION_WHY_MAX } from '../ledger/why.js';
import { METRIC } from '../observability.js';
import type { ReconcileLogger, ReconcileMetricsSink } from './Reconciler.js';

/** Where a resend intent goes: the intake queue. The dispatcher (which has the body) does the rest. */
export interface IntentPublisher {
  publish(body: string): Promise<{ messageId: string }>;
}

/** An operator decision the ledger or the rules refuse. `code` says which rule. */
export class DecisionRefusedError extends SendproofError {
  constructor(code: string, message: string) {
    super('permanent', code, message);
  }
}

export type Outcome = 'accepted' | 'rejected' | 'resend';

export interface DecisionRequest {
  dedupeKey: string;
  outcome: Outcome;
  /** Why, in the operator's words. Stored in the row's history: it must not hold an address or a number. */
  reason: string;
  /** Operator identity; recorded as `by: operator:<id>`. */
  operator: string;
  /** `resend` only: the new intent (the operator supplies it; the ledger never kept addresses or secrets). */
  intent?: unknown;
  /**
   * Re-running a `resend` whose publish failed: the same decision id republishes the same new intent
   * (the new key dedupes at the dispatcher) instead of recording a second decision.
   */
  decisionId?: string;
}

export interface DecisionResult {
  decisionId: string;
  dedupeKey: string;
  state: DeliveryRecord['state'];
  /** `resend`: the new intent's dedupe key and the queue message id it was published under. */
  newDedupeKey?: string;
  publishedMessageId?: string;
  fallbackAdvanced?: boolean;
  /** The decision was already recorded (a re-run with the same decision id). */
  alreadyRecorded?: boolean;
}

export interface OperatorDecisionsDeps {
  ledger: Ledger;
  purposes: PurposeRegistry;
  clock: Clock;
  publisher?: IntentPublisher;
  logger?: ReconcileLogger;
  metrics?: ReconcileMetricsSink;
  /** Tests pass a fixed id source; default: time + random, always a valid key identifier. */
  newDecisionId?: () => string;
}

const DECIDABLE: readonly DeliveryRecord['state'][] = ['unknown', 'quarantined', 'stalled'];
/** An address or a phone number in a free-text reason would be persisted in the history forever. */
const LOOKS_LIKE_EMAIL = /[^\s@]+@[^\s@]+\.[^\s@]+/;
// A number written with its + (any separators), or 10+ digits in a row. Dates and ticket ids pass.
const LOOKS_LIKE_PHONE = /\+\d[\d\s().-]{6,}\d|\d{10,}/;

const defaultDecisionId = (clock: Clock): string =>
  `d${new Date(clock.now())
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;

const sameMessage = (a: MessageIdentity, b: MessageIdentity): boolean =>
  a.tenant === b.tenant &&
  a.purpose === b.purpose &&
  a.eventId === b.eventId &&
  a.recipientRef === b.recipientRef &&
  a.channel === b.channel &&
  a.templateRevision === b.templateRevision;

/**
 * Operator decisions on rows the system could not settle. Every decision is one version-conditioned
 * transition with the operator's identity (`operator:<id>`) and reason; nothing is decided twice.
 *
 * - accepted → `resolved_accepted`: the operator knows it arrived (e.g. the provider's console shows it).
 * - rejected → `resolved_rejected`: it did not and will not; a fallback flow moves to its next channel.
 * - resend   → `superseded` + a NEW intent, linked by `resendOf`, under a new key (`…:resend=<id>`).
 *              The old row is never reused. Order: supersede first, then publish — a publish that fails
 *              is repeated with the same decision id; a new intent never exists next to a live old row.
 */
export class OperatorDecisions {
  constructor(private readonly deps: OperatorDecisionsDeps) {}

  async decide(request: DecisionRequest): Promise<DecisionResult> {
    const reason = request.reason.trim();
    if (reason.length < 3) throw new DecisionRefusedError('reason_required', 'a decision needs a reason');
    if (reason.length > 200)
      throw new DecisionRefusedError('reason_too_long', 'keep the reason under 200 characters');
    if (LOOKS_LIKE_EMAIL.test(reason) || LOOKS_LIKE_PHONE.test(reason))
      throw new DecisionRefusedError(
        'reason_has_contact',
        'the reason looks like it holds an email address or a phone number; use the recipient ref or a ticket id',
      );
    // Both are stored (history `by`, the archive's actor, the new dedupe key): never an email address.
    if (!IdentifierSchema.safeParse(request.operator).success || request.operator.includes('@'))
      throw new DecisionRefusedError(
        'operator_invalid',
        'operator must be an identifier without @ (letters, digits, . _ + -), such as an employee id',
      );
    const decisionId =
      request.decisionId ?? (this.deps.newDecisionId ?? (() => defaultDecisionId(this.deps.clock)))();
    if (!IdentifierSchema.safeParse(decisionId).success || decisionId.includes('@'))
      throw new DecisionRefusedError('decision_id_invalid', 'decision id must be an identifier');

    let row = await this.deps.ledger.get(request.dedupeKey);
    if (!row) throw new DecisionRefusedError('not_found', `no ledger row ${request.dedupeKey}`);
    if (request.outcome === 'resend' && row.state === 'superseded')
      return this.republish(row, request, decisionId);
    row = await this.markStaleDispatchingUnknown(row, request.operator);
    if (!DECIDABLE.includes(row.state))
      throw new DecisionRefusedError(
        'not_decidable',
        `row ${row.pk} is ${row.state}; only unknown, quarantined or stalled rows take an operator decision`,
      );
    if (row.state === 'stalled' && request.outcome === 'accepted')
      throw new DecisionRefusedError(
        'not_decidable',
        `row ${row.pk} is stalled: nothing was sent from it, so it can be rejected or resent, not accepted`,
      );
    const by = `operator:${request.operator}`;
    const why = boundWhy(`${request.outcome}:${decisionId}:${reason}`, DECISION_WHY_MAX);
    const now = this.deps.clock.now();
    const ttl = this.ttlFor(row, now);

    if (request.outcome === 'accepted' || request.outcome === 'rejected') {
      const to = request.outcome === 'accepted' ? 'resolved_accepted' : 'resolved_rejected';
      const result = await this.deps.ledger.transition({
        pk: row.pk,
        from: row.state,
        to,
        expectedVersion: row.version,
        by,
        why,
        now,
        ...(ttl !== undefined ? { set: { ttl } } : {}),
      });
      if (result.kind !== 'ok') throw this.moved(row, result.current);
      this.recorded(row, request, decisionId, to);
      const fallbackAdvanced =
        to === 'resolved_rejected' &&
        (await continueFallback(this.deps.ledger, result.record, this.deps.clock.now()));
      return { decisionId, dedupeKey: row.pk, state: to, ...(fallbackAdvanced ? { fallbackAdvanced } : {}) };
    }

    const resend = await this.resendFor(row, request, decisionId);
    const publisher = this.requirePublisher();
    const result = await this.deps.ledger.transition({
      pk: row.pk,
      from: row.state,
      to: 'superseded',
      expectedVersion: row.version,
      by,
      why,
      now,
      set: { supersededBy: resend.newKey, ...(ttl !== undefined ? { ttl } : {}) },
    });
    if (result.kind !== 'ok') throw this.moved(row, result.current);
    this.recorded(row, request, decisionId, 'superseded');
    let published: Awaited<ReturnType<typeof publisher.publish>>;
    try {
      published = await publisher.publish(resend.body);
    } catch (error) {
      // The decision is recorded (the old row is superseded); only the new intent did not leave. Say how
      // to finish it, rather than let the operator discover it from a refusal on the next attempt.
      throw new SendproofError(
        'retryable',
        'resend_not_published',
        `decision ${decisionId} is recorded on ${row.pk}, but the new intent was not published ` +
          `(${error instanceof Error ? error.name : 'error'}); run the same resolve again with --decision-id ${decisionId}`,
      );
    }
    return {
      decisionId,
      dedupeKey: row.pk,
      state: 'superseded',
      newDedupeKey: resend.newKey,
      publishedMessageId: published.messageId,
    };
  }

  /** The same resend decision again (its publish failed): publish the same new intent, record nothing new. */
  private async republish(
    row: DeliveryRecord,
    request: DecisionRequest,
    decisionId: string,
  ): Promise<DecisionResult> {
    const resend = await this.resendFor(row, request, decisionId);
    if (row.supersededBy !== resend.newKey)
      throw new DecisionRefusedError(
        'not_decidable',
        `row ${row.pk} was superseded by ${row.supersededBy ?? '(none)'}; pass that decision's id to republish it`,
      );
    const published = await this.requirePublisher().publish(resend.body);
    return {
      decisionId,
      dedupeKey: row.pk,
      state: row.state,
      newDedupeKey: resend.newKey,
      publishedMessageId: published.messageId,
      alreadyRecorded: true,
    };
  }

  /**
   * The resend's new intent: the operator's file when given; otherwise, while the notification's intent
   * is sealed in the ledger, a resume notice that asks the dispatcher (the only code that opens seals)
   * to send it again under the new key. Without either, the operator must supply the intent.
   */
  private async resendFor(
    row: DeliveryRecord,
    request: DecisionRequest,
    decisionId: string,
  ): Promise<{ body: string; newKey: string }> {
    if (request.intent !== undefined) return this.resendIntent(row, request, decisionId);
    const identity = parseDedupeKey(row.pk);
    if (!identity) throw new DecisionRefusedError('not_decidable', `row ${row.pk} is not a delivery key`);
    if (!(await this.deps.ledger.getSeal(row.logicalKey)))
      throw new DecisionRefusedError(
        'intent_required',
        'resend needs the new intent (--intent file.json): nothing is sealed for this notification any more',
      );
    const newKey = deriveDedupeKey({ ...identity, resendDecisionId: decisionId }).readable;
    return {
      body: resumeMessage(row.logicalKey, { dedupeKey: row.pk, decisionId, channel: row.channel }),
      newKey,
    };
  }

  /** Validates the operator's intent against the old key and links it: `resendOf` + the new dedupe key. */
  private resendIntent(
    row: DeliveryRecord,
    request: DecisionRequest,
    decisionId: string,
  ): { body: string; newKey: string; intent: Intent } {
    if (request.intent === undefined)
      throw new DecisionRefusedError(
        'intent_required',
        'resend needs the new intent (--intent file.json): the ledger never kept the addresses or secrets',
      );
    if (request.intent === null || typeof request.intent !== 'object' || Array.isArray(request.intent))
      throw new DecisionRefusedError('intent_invalid', 'the intent must be a JSON object');
    const oldIdentity = parseDedupeKey(row.pk);
    if (!oldIdentity) throw new DecisionRefusedError('not_decidable', `row ${row.pk} is not a delivery key`);
    const raw = { ...(request.intent as Record<string, unknown>) };
    // A resend is about one channel of one message: without an explicit delivery mode it is `all`.
    if (raw.delivery === undefined) raw.delivery = 'all';
    raw.resendOf = { dedupeKey: row.pk, decisionId };
    const parsed = parseIntent(raw, { purposes: this.deps.purposes, clock: this.deps.clock });
    if (!parsed.ok) throw new DecisionRefusedError('intent_invalid', parsed.error.message);
    const { intent, policy } = parsed.value;
    if (intent.channels.length !== 1 || intent.channels[0] !== row.channel)
      throw new DecisionRefusedError(
        'intent_mismatch',
        `a resend of ${row.pk} must name exactly the ${row.channel} channel`,
      );
    const identity = identityOf(intent, policy, row.channel);
    if (!sameMessage(identity, oldIdentity)) {
      const { resendDecisionId: _r, ...offered } = identity;
      throw new DecisionRefusedError(
        'intent_mismatch',
        `the intent's identity (${deriveDedupeKey(offered).readable}) does not match ${row.pk}`,
      );
    }
    return { body: JSON.stringify(intent), newKey: deriveDedupeKey(identity).readable, intent };
  }

  /** A `dispatching` row whose lease expired is ambiguous: it becomes `unknown` before anyone decides. */
  private async markStaleDispatchingUnknown(row: DeliveryRecord, operator: string): Promise<DeliveryRecord> {
    if (row.state !== 'dispatching') return row;
    const now = this.deps.clock.now();
    if ((row.leaseUntil ?? 0) > now)
      throw new DecisionRefusedError(
        'dispatch_in_progress',
        `row ${row.pk} is being dispatched right now; try later`,
      );
    const result = await expireDispatchingLease(this.deps.ledger, row, `operator:${operator}`, now);
    if (result.kind !== 'ok') throw this.moved(row, result.current);
    return result.record;
  }

  private requirePublisher(): IntentPublisher {
    if (!this.deps.publisher)
      throw new DecisionRefusedError('no_queue', 'resend needs the intake queue (--queue-url or config)');
    return this.deps.publisher;
  }

  private ttlFor(row: DeliveryRecord, now: number): number | undefined {
    const policy = this.deps.purposes.find(row.purpose);
    return policy ? retentionTtl(policy, now) : undefined;
  }

  private moved(row: DeliveryRecord, current?: DeliveryRecord): DecisionRefusedError {
    return new DecisionRefusedError(
      'row_moved',
      `row ${row.pk} moved to ${current?.state ?? 'another version'} while deciding; look at it again`,
    );
  }

  private recorded(row: DeliveryRecord, request: DecisionRequest, decisionId: string, state: string): void {
    this.deps.metrics?.count(METRIC.manualDecisions, 1, { outcome: request.outcome });
    this.deps.logger?.info('operator decision recorded', {
      dedupeKey: row.pk,
      decisionId,
      operator: request.operator,
      outcome: request.outcome,
      state,
    });
  }
}
