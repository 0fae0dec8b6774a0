import { resumeMessage } from '../dispatch/queueMessage.js';
import type { Clock } from '../domain/clock.js';
import type { Channel } from '../domain/purposes.js';
import { replayWindowOpen } from '../domain/replay.js';
import { STALL_AT_RESUME_LIMIT, type SweepRowAction, sweepRow } from '../domain/sweep.js';
import type { RecordedEvidence } from '../evidence/EvidenceRecorder.js';
import { continueFallback } from '../ledger/flows.js';
import { expireDispatchingLease } from '../ledger/leases.js';
import type { DeliveryRecord, Ledger, SealedIntent } from '../ledger/port.js';
import { METRIC } from '../observability.js';
import { holderNamed, type Transport } from '../transports/port.js';
import type { IntentPublisher } from './OperatorDecisions.js';
import type { ReconcileLogger, ReconcileMetricsSink } from './Reconciler.js';

export interface SweeperDeps {
  ledger: Ledger;
  transports: Readonly<Record<Channel, Transport>>;
  /** Each channel's providers in failover order: a row's replay window is its holder's. */
  providers?: Readonly<Record<Channel, readonly Transport[]>>;
  clock: Clock;
  /** The intake queue: a resume notice goes there, and the dispatcher (the only sender) does the rest. */
  publisher: IntentPublisher;
  /** Recorded as `by` on every transition: `sweep:<runId>`. */
  runId: string;
  /** After a lease or a due time, how long the queue message gets to come back first. */
  graceMs: number;
  /** When to look again at a notification someone else owns for now, and after a resume. */
  recheckMs: number;
  /** Resume notices without the notification moving before its rows are `stalled`. Default 5. */
  maxResumes?: number;
  /** How long an accepted fallback channel keeps its seal, for a bounce that moves the pointer. Default 24 h. */
  fallbackHoldMs?: number;
  /** A `retry_wait` row this long past due with nothing sealed is `stalled`. Default 3 × graceMs. */
  strandedAfterMs?: number;
  pageSize?: number;
  /** Settles a row the sweep marked unknown from provider events recorded earlier (lib/evidence). */
  evidence?: RecordedEvidence;
  logger?: ReconcileLogger;
  metrics?: ReconcileMetricsSink;
}

export interface SweepSummary {
  seals: number;
  resumed: number;
  released: number;
  markedUnknown: number;
  fallbacksAdvanced: number;
  /** `provider_scheduled` rows whose send time passed, settled `accepted`. */
  handoffsSettled: number;
  stalled: number;
  /** Pages left for the next run (the sweep is bounded per run). */
  hasMore: boolean;
}

const MAX_PAGES = 20;

/**
 * The ledger's sweep: the owner of every notification that left the happy path. It reads the sealed
 * notifications whose due time has come (the attention index's `parked` partition, earliest first) and,
 * for each, the rows of its channels, then resumes, settles, waits or releases — never sends. A resume
 * is a notice on the intake queue naming the sealed notification; the dispatcher opens the seal and
 * handles it exactly as the first delivery, so every gate runs again against the clock of that moment.
 *
 * Rows with no seal that the index shows waiting long past due (`retry_wait`) cannot be resumed: they
 * become `stalled` with a reason, where the stats, the alarm and an operator see them.
 */
export class Sweeper {
  private readonly by: string;

  constructor(private readonly deps: SweeperDeps) {
    this.by = `sweep:${deps.runId}`;
  }

  async sweep(): Promise<SweepSummary> {
    const summary: SweepSummary = {
      seals: 0,
      resumed: 0,
      released: 0,
      markedUnknown: 0,
      fallbacksAdvanced: 0,
      handoffsSettled: 0,
      stalled: 0,
      hasMore: false,
    };
    const now = this.deps.clock.now();
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await this.deps.ledger.listDue(now, {
        limit: this.deps.pageSize ?? 25,
        ...(cursor ? { cursor } : {}),
      });
      for (const seal of page.items) await this.sweepSeal(seal, summary);
      summary.seals += page.items.length;
      cursor = page.cursor;
      pages += 1;
    } while (cursor && pages < MAX_PAGES);
    summary.hasMore = cursor !== undefined;
    summary.stalled += await this.stallUnsealed(now);
    if (summary.resumed) this.deps.metrics?.count(METRIC.resumes, summary.resumed);
    if (summary.stalled) this.deps.metrics?.count(METRIC.stalled, summary.stalled);
    return summary;
  }

  private async sweepSeal(seal: SealedIntent, summary: SweepSummary): Promise<void> {
    const { ledger } = this.deps;
    const now = this.deps.clock.now();
    const flow = seal.fallback ? await ledger.getFlow(seal.logicalKey) : undefined;
    // A fallback has one active channel; everything else, every channel of the intent.
    const considered = seal.fallback
      ? seal.rows.filter((r) => r.channel === (flow?.order[flow.activeIndex] ?? seal.rows[0]?.channel))
      : seal.rows;
    const hasNextChannel = flow !== undefined && flow.activeIndex < flow.order.length - 1;
    const actions: Array<{ row: DeliveryRecord | undefined; action: SweepRowAction }> = [];
    for (const ref of considered) {
      const row = await ledger.get(ref.dedupeKey);
      const transport = (row && holderNamed(this.deps, row)) ?? this.deps.transports[ref.channel];
      actions.push({
        row,
        action: sweepRow(row, {
          now,
          graceMs: this.deps.graceMs,
          recheckMs: this.deps.recheckMs,
          sealEndsAt: seal.ttl * 1000,
          hasNextChannel,
          fallbackHoldMs: this.deps.fallbackHoldMs ?? 24 * 3600 * 1000,
          replayWindowOpen: row !== undefined && replayWindowOpen(row, transport, now),
        }),
      });
    }
    let resume = actions.some((a) => a.action.kind === 'resume');
    for (const { row, action } of actions) {
      if (!row) continue;
      if (action.kind === 'mark_unknown' && (await this.markUnknown(row))) {
        summary.markedUnknown += 1;
        // Evidence recorded while it was dispatching settles it now; otherwise a keyed replay is asked
        // at once when the provider still remembers the key, and else it is the reconciler's.
        const unknown = await ledger.get(row.pk);
        const settled = unknown ? await this.deps.evidence?.applyRecordedEvidence(unknown) : undefined;
        const marked = settled ?? unknown;
        const holder = (marked && holderNamed(this.deps, marked)) ?? this.deps.transports[row.channel];
        if (marked && replayWindowOpen(marked, holder, now)) resume = true;
      }
      if (action.kind === 'settle_handoff' && (await this.settleHandoff(row))) summary.handoffsSettled += 1;
      if (action.kind === 'advance' && (await continueFallback(ledger, row, now))) {
        summary.fallbacksAdvanced += 1;
        resume = true;
      }
    }
    if (resume) {
      if (seal.resumes >= (this.deps.maxResumes ?? 5)) {
        // Resumed again and again without the notification moving: an operator must look. Every row
        // nobody else settles is stalled (lib/domain/sweep.ts ownerAtResumeLimit), with the last reason
        // a dispatcher gave (a seal that no longer opens says so).
        const why =
          seal.reason === 'resumed' ? 'resume_limit_reached' : `resume_limit_reached:${seal.reason}`;
        for (const { row } of actions)
          if (row && STALL_AT_RESUME_LIMIT.includes(row.state))
            summary.stalled += (await this.stall(row, why)) ? 1 : 0;
        if (actions.some((a) => a.row === undefined)) {
          // Sealed, never claimed, and no resume got as far as a claim: no row can carry the reason.
          summary.stalled += 1;
          this.deps.logger?.warn('sealed notification stalled before any claim', {
            logicalKey: seal.logicalKey,
            why,
          });
        }
        await ledger.rearm(seal.logicalKey, seal.ttl * 1000, 'stalled');
        return;
      }
      await this.deps.publisher.publish(resumeMessage(seal.logicalKey));
      await ledger.rearm(seal.logicalKey, now + this.deps.recheckMs, 'resumed', true);
      summary.resumed += 1;
      this.deps.logger?.info('sealed notification resumed', {
        logicalKey: seal.logicalKey,
        reason: seal.reason,
      });
      return;
    }
    const later = actions.flatMap((a) => (a.action.kind === 'later' ? [a.action.at] : []));
    if (later.length === 0) {
      await ledger.release(seal.logicalKey);
      summary.released += 1;
      return;
    }
    await ledger.rearm(seal.logicalKey, Math.min(...later), seal.reason);
  }

  /** The one `dispatching → unknown` rule for an expired lease, as the dispatcher applies it. */
  private async markUnknown(row: DeliveryRecord): Promise<boolean> {
    const now = this.deps.clock.now();
    const result = await expireDispatchingLease(this.deps.ledger, row, this.by, now);
    if (result.kind === 'ok') this.deps.metrics?.count(METRIC.unknown);
    return result.kind === 'ok';
  }

  /**
   * A provider-held message whose send time (plus grace) has passed: the provider sent it, under the id
   * recorded at handoff. Evidence of a bounce or failure still arrives as for any accepted row.
   */
  private async settleHandoff(row: DeliveryRecord): Promise<boolean> {
    const now = this.deps.clock.now();
    const result = await this.deps.ledger.transition({
      pk: row.pk,
      from: 'provider_scheduled',
      to: 'accepted',
      expectedVersion: row.version,
      by: this.by,
      why: 'provider_send_time_passed',
      ...(row.providerMessageId ? { set: { providerMessageId: row.providerMessageId } } : {}),
      now,
    });
    return result.kind === 'ok';
  }

  private async stall(row: DeliveryRecord, why: string): Promise<boolean> {
    const now = this.deps.clock.now();
    const result = await this.deps.ledger.transition({
      pk: row.pk,
      from: row.state,
      to: 'stalled',
      expectedVersion: row.version,
      by: this.by,
      why,
      ...(row.state === 'claimed' ? { leaseExpiredBefore: now } : {}),
      now,
    });
    if (result.kind !== 'ok') return false;
    this.deps.logger?.warn('row stalled: nothing can resume it without an operator', {
      dedupeKey: row.pk,
      why,
    });
    return true;
  }

  /** `retry_wait` rows long past due whose notification has no seal: nothing can resume them. */
  private async stallUnsealed(now: number): Promise<number> {
    const before = now - (this.deps.strandedAfterMs ?? 3 * this.deps.graceMs);
    let stalled = 0;
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await this.deps.ledger.listAttention('retry_wait', {
        limit: this.deps.pageSize ?? 25,
        ...(cursor ? { cursor } : {}),
      });
      for (const row of page.items) {
        // Oldest due first: the first row not yet stranded ends the pass.
        if ((row.nextAttemptAt ?? row.attnAt ?? now) > before) return stalled;
        if (await this.deps.ledger.getSeal(row.logicalKey)) continue;
        if (await this.stall(row, 'nothing_sealed')) stalled += 1;
      }
      cursor = page.cursor;
      pages += 1;
    } while (cursor && pages < MAX_PAGES);
    return stalled;
  }
}
