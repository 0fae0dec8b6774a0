import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { cancelCovers, cancelWhy } from '../domain/cancel.js';
import { type Clock, systemClock } from '../domain/clock.js';
import { type FieldIssue, SendproofError } from '../domain/errors.js';
import { IdentifierSchema } from '../domain/intent.js';
import { type Channel, ChannelSchema, PurposeRegistry, retentionTtl } from '../domain/purposes.js';
import { isReplay } from '../domain/resume.js';
import { type DeliveryState, isTerminal } from '../domain/states.js';
import type { OperatorQueries } from '../ledger/operatorQueries.js';
import type { CancelOrder, DeliveryRecord, Ledger } from '../ledger/port.js';
import type { CancelResult, Transport } from '../transports/port.js';

/** An address or a phone number in a free-text reason would be persisted in the history forever. */
const LOOKS_LIKE_EMAIL = /[^\s@]+@[^\s@]+\.[^\s@]+/;
const LOOKS_LIKE_PHONE = /\+\d[\d\s().-]{6,}\d|\d{10,}/;

export const CancelRequestSchema = z.strictObject({
  tenant: z._default(IdentifierSchema, 'default'),
  /** The business event whose notifications are withdrawn (every recipient of a fan-out). */
  eventId: IdentifierSchema,
  /** Absent: every cancellable purpose of the event. */
  purpose: z.optional(z.string().check(z.minLength(1), z.maxLength(48))),
  /** Absent: every channel. */
  channel: z.optional(ChannelSchema),
  reason: z.string().check(
    z.trim(),
    z.minLength(3, 'a cancel needs a reason'),
    z.maxLength(200),
    z.refine(
      (r) => !LOOKS_LIKE_EMAIL.test(r) && !LOOKS_LIKE_PHONE.test(r),
      'looks like it holds an email address or a phone number; use a ticket or refund id',
    ),
  ),
  /** Recorded as `operator:<id>` (the CLI) or as given by the application (`app:<id>`). */
  operator: IdentifierSchema,
  /**
   * The rows to visit, when the caller knows them (`publishIntents()` returns each intent's dedupe keys):
   * read by key instead of a scan of the table for the event. Rows not listed are still stopped by the
   * marker at their next dispatch; only the report (and a provider-side cancel) needs the visit.
   */
  dedupeKeys: z.optional(
    z.array(z.string().check(z.minLength(3), z.maxLength(2048))).check(z.maxLength(1000)),
  ),
  /** How long to wait for a row that was already `dispatching` to reach its outcome. Default 10 s. */
  waitMs: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(120_000)), 10_000),
});
export type CancelRequest = z.input<typeof CancelRequestSchema>;

/** What happened to one existing row, and which came first: the cancel or the dispatch. */
export type RowCancelOutcome =
  /** Stopped: nothing was sent. `how` says who wrote `cancelled` (this command, the dispatcher, the provider). */
  | {
      result: 'cancelled';
      how: 'row_cancelled' | 'marker_seen_by_dispatch' | 'provider_confirmed';
      at: number;
    }
  /** Cancelled before, by this or an earlier order. */
  | { result: 'already_cancelled'; at: number; by: string }
  /** The dispatch came first: `dispatching` since `since`; `outcome` once known (or still `dispatching`). */
  | { result: 'too_late'; since: number; outcome: DeliveryState; providerMessageId?: string }
  /** Handed off to an adapter that cannot cancel (or the provider refused): recorded on the row. */
  | { result: 'cancel_too_late'; handoffAt: number; transport?: string; providerAnswer?: string }
  /** The provider's cancel route gave no trustworthy answer: run the cancel again. */
  | { result: 'cancel_unconfirmed'; providerAnswer: string }
  /** Never sent for another reason (expired, suppressed, rejected, blocked, …). */
  | { result: 'not_sent'; state: DeliveryState }
  /** The purpose's policy does not declare `cancellable`. */
  | { result: 'not_cancellable'; purpose: string };

export interface RowCancelReport {
  dedupeKey: string;
  purpose: string;
  channel: Channel;
  recipientRef: string;
  outcome: RowCancelOutcome;
}

export interface CancelReport {
  tenant: string;
  eventId: string;
  order: CancelOrder;
  /** False when the same scope had been committed before: `order` is that first commit. */
  committed: boolean;
  /** Epoch ms at which the marker write returned: every dispatch reading it from then on is stopped. */
  committedAt: number;
  rows: RowCancelReport[];
}

export interface CancelDeps {
  ledger: Ledger;
  /**
   * Finds the event's rows when the caller passes no `dedupeKeys` (a paginated scan: operator use, the
   * CLI and the console). Without it, only the rows named by `dedupeKeys` are visited.
   */
  queries?: Pick<OperatorQueries, 'findByEvent'>;
  purposes?: PurposeRegistry;
  clock?: Clock;
  /** The configured adapters, for provider-side cancels of `provider_scheduled` rows. */
  transports?: Partial<Readonly<Record<Channel, Transport>>>;
  sleep?: (ms: number) => Promise<void>;
  /** Actor prefix: `operator` for the CLI (default), `app` for an application's refund handler. */
  actorKind?: 'operator' | 'app';
}

/** A cancel refused at the boundary (bad input, unknown or non-cancellable purpose); nothing was written. */
export class CancelRefusedError extends SendproofError {
  constructor(readonly issues: FieldIssue[]) {
    super('permanent', 'cancel_refused', issues.map((i) => `${i.field}: ${i.message}`).join('; '));
  }
}

const POLL_MS = 100;

/**
 * Cancels the notifications of one business event by identity. First the cancel marker is committed
 * (a conditional write: the same scope is committed once), so every dispatch of the event that reads it
 * from now on — every recipient and channel of a fan-out, including rows not claimed yet — is stopped.
 * Then each existing row is visited: rows that have not reached a provider are moved to `cancelled`
 * here; a row already `dispatching` is reported "too late: dispatching since T" with its outcome once
 * known (unless its own marker read saw the cancel, when the dispatcher writes `cancelled`); a message a
 * provider holds for later is cancelled through the provider's route; one handed to an adapter without
 * cancel is recorded as `cancel_too_late` with the handoff time.
 */
export const cancelNotifications = async (deps: CancelDeps, input: CancelRequest): Promise<CancelReport> => {
  const parsed = CancelRequestSchema.safeParse(input);
  if (!parsed.success)
    throw new CancelRefusedError(
      parsed.error.issues.map(
        (i): FieldIssue => ({ field: i.path.map(String).join('.') || '(root)', message: i.message }),
      ),
    );
  const request = parsed.data;
  const purposes = deps.purposes ?? new PurposeRegistry();
  const clock = deps.clock ?? systemClock;
  const sleep = deps.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  if (request.purpose !== undefined) {
    const policy = purposes.find(request.purpose);
    if (!policy) throw new CancelRefusedError([{ field: 'purpose', message: 'is not a registered purpose' }]);
    if (!policy.cancellable)
      throw new CancelRefusedError([
        { field: 'purpose', message: `${request.purpose} is not cancellable (its policy says so)` },
      ]);
  }
  // Refused before the marker is written: a cancel that cannot find the event's rows must not leave a
  // committed marker behind an error that says nothing was written.
  if (!request.dedupeKeys && !deps.queries)
    throw new CancelRefusedError([
      { field: 'dedupeKeys', message: 'name the rows to visit, or give the cancel an operator-queries port' },
    ]);
  const order: CancelOrder = {
    id: `${request.purpose ?? '*'}/${request.channel ?? '*'}`,
    by: `${deps.actorKind ?? 'operator'}:${request.operator}`,
    reason: request.reason,
    at: clock.now(),
    ...(request.purpose !== undefined ? { purpose: request.purpose } : {}),
    ...(request.channel !== undefined ? { channel: request.channel } : {}),
  };
  // The marker outlives every dispatch that could still read it: the longest retention of any purpose.
  const ttl = Math.max(...purposes.names().map((p) => retentionTtl(purposes.get(p), order.at)));
  const commit = await deps.ledger.commitCancel(request.tenant, request.eventId, order, ttl);
  const committedAt = clock.now();
  const effective = commit.order;

  const candidates = request.dedupeKeys
    ? (await Promise.all(request.dedupeKeys.map((k) => deps.ledger.get(k)))).filter(
        (r): r is DeliveryRecord => r !== undefined && r.eventId === request.eventId,
      )
    : // A paginated scan (operator use): pass dedupeKeys from an application's hot path.
      await deps.queries!.findByEvent(request.eventId);
  const rows = candidates.filter(
    (r) =>
      r.kind === 'delivery' && r.tenant === request.tenant && cancelCovers(effective, r.purpose, r.channel),
  );
  const visit = new RowVisitor(deps, purposes, clock, sleep, effective, request.waitMs);
  const reports = await Promise.all(
    rows.map(async (row) => ({
      dedupeKey: row.pk,
      purpose: row.purpose,
      channel: row.channel,
      recipientRef: row.recipientRef,
      outcome: await visit.row(row),
    })),
  );
  return {
    tenant: request.tenant,
    eventId: request.eventId,
    order: effective,
    committed: commit.kind === 'committed',
    committedAt,
    rows: reports,
  };
};

const lastEntry = (row: DeliveryRecord, state: DeliveryState) =>
  [...row.history].reverse().find((e) => e.s === state);

class RowVisitor {
  constructor(
    private readonly deps: CancelDeps,
    private readonly purposes: PurposeRegistry,
    private readonly clock: Clock,
    private readonly sleep: (ms: number) => Promise<void>,
    private readonly order: CancelOrder,
    private readonly waitMs: number,
  ) {}

  async row(initial: DeliveryRecord): Promise<RowCancelOutcome> {
    let row = initial;
    const policy = this.purposes.find(row.purpose);
    if (!policy?.cancellable) return { result: 'not_cancellable', purpose: row.purpose };
    for (let round = 0; round < 5; round++) {
      const step = await this.decide(row);
      if ('outcome' in step) return step.outcome;
      row = step.reread;
    }
    return { result: 'too_late', since: row.updatedAt, outcome: row.state };
  }

  /** One look at the row: an outcome, or the row as it stands after another actor moved it. */
  private async decide(
    row: DeliveryRecord,
  ): Promise<{ outcome: RowCancelOutcome } | { reread: DeliveryRecord }> {
    const { ledger } = this.deps;
    switch (row.state) {
      case 'cancelled': {
        const entry = lastEntry(row, 'cancelled')!;
        // Written by the dispatcher after its marker read found this very order: stopped by this cancel.
        if (entry.why?.startsWith(`cancelled:${this.order.id}:`) && entry.at >= this.order.at)
          return {
            outcome: {
              result: 'cancelled',
              how: entry.why.includes(':marker_read_before_send:')
                ? 'marker_seen_by_dispatch'
                : // The dispatch re-read the marker after the provider took the send, and cancelled there.
                  entry.why.includes(':provider_confirmed:')
                  ? 'provider_confirmed'
                  : 'row_cancelled',
              at: entry.at,
            },
          };
        return { outcome: { result: 'already_cancelled', at: entry.at, by: entry.by } };
      }
      case 'scheduled':
      case 'claimed':
      case 'stalled':
      case 'retry_wait': {
        // A row that was unknown once may have been sent: a cancel cannot settle that.
        if (isReplay(row)) return { outcome: this.tooLate(row) };
        return this.move(row, 'cancelled', cancelWhy(this.order, 'row_cancelled'), 'row_cancelled');
      }
      case 'dispatching':
        return this.awaitOutcome(row);
      case 'provider_scheduled':
        return this.cancelAtProvider(row);
      case 'accepted': {
        const handoffAt = (lastEntry(row, 'dispatching') ?? lastEntry(row, 'accepted'))?.at ?? row.updatedAt;
        const entry = lastEntry(row, 'accepted');
        // Accepted before this cancel was committed: handed off, and nothing can call it back.
        const recorded = row.history.some((e) => e.why?.startsWith(`cancel_too_late:${this.order.id}:`));
        if (entry && !recorded) {
          await ledger.annotate({
            pk: row.pk,
            state: 'accepted',
            expectedVersion: row.version,
            by: this.order.by,
            why: `cancel_too_late:${this.order.id}:handoff=${new Date(handoffAt).toISOString()}:${row.transport ?? 'unknown'}:${this.order.reason}`.slice(
              0,
              240,
            ),
            now: this.clock.now(),
          });
        }
        return {
          outcome: {
            result: 'cancel_too_late',
            handoffAt,
            ...(row.transport ? { transport: row.transport } : {}),
          },
        };
      }
      case 'unknown':
      case 'quarantined':
      case 'resolved_accepted':
      case 'superseded':
        return { outcome: this.tooLate(row) };
      default:
        if (isTerminal(row.state)) return { outcome: { result: 'not_sent', state: row.state } };
        return { outcome: this.tooLate(row) };
    }
  }

  private tooLate(row: DeliveryRecord): RowCancelOutcome {
    const since = lastEntry(row, 'dispatching')?.at ?? row.updatedAt;
    return {
      result: 'too_late',
      since,
      outcome: row.state,
      ...(row.providerMessageId ? { providerMessageId: row.providerMessageId } : {}),
    };
  }

  private async move(
    row: DeliveryRecord,
    to: DeliveryState,
    why: string,
    how: 'row_cancelled' | 'provider_confirmed',
  ): Promise<{ outcome: RowCancelOutcome } | { reread: DeliveryRecord }> {
    const now = this.clock.now();
    const policy = this.purposes.get(row.purpose);
    const result = await this.deps.ledger.transition({
      pk: row.pk,
      from: row.state,
      to,
      expectedVersion: row.version,
      by: this.order.by,
      why: why.slice(0, 240),
      set: { ttl: retentionTtl(policy, now) },
      now,
    });
    if (result.kind === 'ok') return { outcome: { result: 'cancelled', how, at: now } };
    const current = result.current ?? (await this.deps.ledger.get(row.pk));
    if (!current) return { outcome: { result: 'not_sent', state: row.state } };
    return { reread: current };
  }

  /** The dispatch came first. Wait (bounded) for its outcome: `cancelled` if its marker read saw this cancel. */
  private async awaitOutcome(
    row: DeliveryRecord,
  ): Promise<{ outcome: RowCancelOutcome } | { reread: DeliveryRecord }> {
    const since = lastEntry(row, 'dispatching')?.at ?? row.updatedAt;
    const deadline = this.clock.now() + this.waitMs;
    let current: DeliveryRecord | undefined = row;
    while (current?.state === 'dispatching' && this.clock.now() < deadline) {
      await this.sleep(POLL_MS);
      current = await this.deps.ledger.get(row.pk);
    }
    if (!current) return { outcome: { result: 'too_late', since, outcome: 'dispatching' } };
    if (current.state === 'cancelled' || current.state === 'provider_scheduled') return { reread: current };
    return {
      outcome: {
        result: 'too_late',
        since,
        outcome: current.state,
        ...(current.providerMessageId ? { providerMessageId: current.providerMessageId } : {}),
      },
    };
  }

  /** A message the provider holds for later: its cancel route decides, and its answer is recorded. */
  private async cancelAtProvider(
    row: DeliveryRecord,
  ): Promise<{ outcome: RowCancelOutcome } | { reread: DeliveryRecord }> {
    const transport = this.deps.transports?.[row.channel];
    const handoffAt = lastEntry(row, 'provider_scheduled')?.at ?? row.updatedAt;
    if (!transport?.cancelScheduled || !row.providerMessageId || transport.name !== row.transport) {
      return { outcome: { result: 'cancel_unconfirmed', providerAnswer: 'no_cancel_route_configured' } };
    }
    let answer: CancelResult;
    try {
      answer = await transport.cancelScheduled(row.providerMessageId);
    } catch (error) {
      answer = { kind: 'unavailable', reason: `threw:${error instanceof Error ? error.name : 'unknown'}` };
    }
    if (answer.kind === 'cancelled')
      return this.move(
        row,
        'cancelled',
        cancelWhy(this.order, `provider_confirmed:${row.providerMessageId}`),
        'provider_confirmed',
      );
    const detail = answer.reason;
    // The provider's answer is evidence: recorded on the row (its state does not change).
    await this.deps.ledger.annotate({
      pk: row.pk,
      state: row.state,
      expectedVersion: row.version,
      by: this.order.by,
      why: `${answer.kind === 'too_late' ? 'cancel_too_late' : 'cancel_unconfirmed'}:${this.order.id}:provider_answer=${detail}:handoff=${new Date(handoffAt).toISOString()}`.slice(
        0,
        240,
      ),
      now: this.clock.now(),
    });
    if (answer.kind === 'too_late')
      return {
        outcome: { result: 'cancel_too_late', handoffAt, transport: transport.name, providerAnswer: detail },
      };
    return { outcome: { result: 'cancel_unconfirmed', providerAnswer: detail } };
  }
}
