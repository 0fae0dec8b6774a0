import pLimit from 'p-limit';
import type { Clock } from '../domain/clock.js';
import type { Channel, PurposePolicy, PurposeRegistry } from '../domain/purposes.js';
import { retentionTtl } from '../domain/purposes.js';
import { replayWindowOpen } from '../domain/replay.js';
import type { RecordedEvidence } from '../evidence/EvidenceRecorder.js';
import { continueFallback } from '../ledger/flows.js';
import { expireDispatchingLease } from '../ledger/leases.js';
import type { DeliveryRecord, Ledger, TransitionRequest } from '../ledger/port.js';
import { boundWhy } from '../ledger/why.js';
import { METRIC, type MetricsSink, type RunLogger } from '../observability.js';
import { holderNamed, type LookupResult, type Transport } from '../transports/port.js';

/** The reconciler logs no errors of its own (a failed pass throws); the ports live in lib/observability.ts. */
export type ReconcileLogger = RunLogger;
export type ReconcileMetricsSink = MetricsSink;

/** How a row's ambiguity was (or was not) settled in this pass. */
export type RowAction =
  | 'resolved_by_lookup'
  | 'resolved_by_evidence'
  | 'quarantined'
  | 'left_for_replay'
  | 'waiting_for_evidence'
  | 'waiting_for_lookup'
  | 'raced'
  | 'not_ambiguous';

export interface RowOutcome {
  dedupeKey: string;
  action: RowAction;
  state: DeliveryRecord['state'];
  /** Short machine-readable reason, as recorded in the row's history when a transition was made. */
  why?: string;
  /** True when a `rejected` resolution moved a fallback flow to its next channel. */
  fallbackAdvanced?: boolean;
}

/** The reconcile function's contract with the Step Functions loop. */
export interface ReconcilePageResult {
  processed: number;
  resolved: number;
  quarantined: number;
  cursor?: string;
  hasMore: boolean;
}

export interface ReconcileRunSummary extends ReconcilePageResult {
  pages: number;
  left: number;
  raced: number;
  outcomes: RowOutcome[];
}

export interface ReconcilerDeps {
  ledger: Ledger;
  /** The configured adapters. A row is looked up only through the adapter whose name it recorded. */
  transports: Readonly<Record<Channel, Transport>>;
  /**
   * Each channel's providers in failover order (lib/dispatch/providers.ts): a row is looked up through
   * the one that holds its attempt (the one it names), which after a failover is not the first.
   */
  providers?: Readonly<Record<Channel, readonly Transport[]>>;
  purposes: PurposeRegistry;
  clock: Clock;
  /** Recorded as `by` on every transition: `reconciler:<runId>`. */
  runId: string;
  /** Rows resolved at once within one page (lookups are HTTP calls). Default 5. */
  concurrency?: number;
  /** Rows per attention-index page. Default 25. */
  pageSize?: number;
  logger?: ReconcileLogger;
  metrics?: ReconcileMetricsSink;
  /** Settles an `unknown` row from provider events recorded earlier (lib/evidence), before any quarantine. */
  evidence?: RecordedEvidence;
}

/** The dispatcher's margin: a replay is attempted only while the key is remembered for another minute. */

/**
 * The reconciler: turns `unknown` rows into explained outcomes without ever sending anything.
 *
 * For each row, by the capabilities of the transport that dispatched it:
 *   1. lookup (by key, or by provider id)   → accepted | rejected, or "nothing accepted";
 *   2. provider-enforced key, window open    → left alone: the parked intent's redelivery replays it
 *                                              (the dispatcher holds the body; we never kept it);
 *   3. provider pushes evidence              → left for the evidence recorder, until the deadline;
 *   4. nothing available, or deadline passed → quarantined, with the reason.
 *
 *   unknown since ──────────────┬──────────────────────────┬─────────────▶ time
 *                               │ replay window closes     │ ambiguity deadline (purpose policy)
 *   lookup: not_found ─ leave ──┘─ quarantine ─────────────┼─ quarantine
 *   push evidence:    ─ wait ──────────────────────────────┘─ quarantine
 *
 * Every transition is conditioned on the version the reconciler read, so two runs on the same row
 * produce one resolution; the loser reports `raced`.
 */
export class Reconciler {
  private readonly by: string;
  private readonly pageSize: number;
  private readonly concurrency: number;

  constructor(private readonly deps: ReconcilerDeps) {
    this.by = `reconciler:${deps.runId}`;
    this.pageSize = deps.pageSize ?? 25;
    this.concurrency = deps.concurrency ?? 5;
  }

  /** One page of the `unknown` partition of the attention index, oldest first. */
  async reconcilePage(cursor?: string): Promise<ReconcileRunSummary> {
    const page = await this.deps.ledger.listAttention('unknown', {
      limit: this.pageSize,
      ...(cursor ? { cursor } : {}),
    });
    const now = this.deps.clock.now();
    if (!cursor) {
      // Oldest first: the first row of the first page is the oldest unknown.
      const oldest = page.items[0];
      this.deps.metrics?.gauge?.(
        METRIC.oldestUnknownAgeSeconds,
        oldest ? Math.max(0, Math.floor((now - unknownSince(oldest)) / 1000)) : 0,
      );
    }
    const limit = pLimit(this.concurrency);
    const outcomes = await Promise.all(page.items.map((row) => limit(() => this.resolveRow(row))));
    return summarize(outcomes, page.cursor, 1);
  }

  /** All pages, as `sendproof reconcile` runs them. `onPage` reports progress. */
  async runAll(
    onPage?: (page: ReconcileRunSummary, pageNumber: number) => void,
  ): Promise<ReconcileRunSummary> {
    const outcomes: RowOutcome[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await this.reconcilePage(cursor);
      pages += 1;
      outcomes.push(...page.outcomes);
      onPage?.(page, pages);
      cursor = page.cursor;
    } while (cursor);
    return summarize(outcomes, undefined, pages);
  }

  /** Counts rows waiting for the reconciler or a human (reads the attention index only). */
  async census(): Promise<{ unknownRows: number; quarantinedRows: number }> {
    const count = async (state: 'unknown' | 'quarantined') => {
      let total = 0;
      let cursor: string | undefined;
      do {
        const page = await this.deps.ledger.listAttention(state, {
          limit: 100,
          ...(cursor ? { cursor } : {}),
        });
        total += page.items.length;
        cursor = page.cursor;
      } while (cursor);
      return total;
    };
    const [unknownRows, quarantinedRows, oldestAgeSeconds] = await Promise.all([
      count('unknown'),
      count('quarantined'),
      this.oldestNonTerminalAgeSeconds(),
    ]);
    this.deps.metrics?.gauge?.(METRIC.unknownRows, unknownRows);
    this.deps.metrics?.gauge?.(METRIC.quarantinedRows, quarantinedRows);
    this.deps.metrics?.gauge?.(METRIC.oldestNonTerminalAgeSeconds, oldestAgeSeconds);
    return { unknownRows, quarantinedRows };
  }

  /**
   * How long the oldest row the ledger still owns has existed: the head of every attention partition
   * and of the parked seals (which stand for rows the happy path does not index: a claim or a dispatch
   * sealed on its last receive). One small read each; the alarm fires on this gauge.
   */
  async oldestNonTerminalAgeSeconds(): Promise<number> {
    const now = this.deps.clock.now();
    const heads = await Promise.all(
      (['unknown', 'quarantined', 'retry_wait', 'stalled'] as const).map(
        async (state) => (await this.deps.ledger.listAttention(state, { limit: 1 })).items[0]?.createdAt,
      ),
    );
    const seal = (await this.deps.ledger.listDue(Number.MAX_SAFE_INTEGER, { limit: 1 })).items[0];
    // A scheduled notification is owned, not late, until its sendAt.
    const sealBorn = seal ? Math.max(seal.createdAt, seal.notBefore ?? 0) : undefined;
    const born = [...heads, sealBorn].filter((t): t is number => t !== undefined);
    return born.length === 0 ? 0 : Math.max(0, Math.floor((now - Math.min(...born)) / 1000));
  }

  /**
   * Resolves one row. A `dispatching` row met here (e.g. `resolve` on a specific key) whose lease expired
   * becomes `unknown` first; a row in any other state is not ambiguous and is left alone.
   */
  async resolveRow(input: DeliveryRecord): Promise<RowOutcome> {
    let row = input;
    const now = this.deps.clock.now();
    if (row.state === 'dispatching') {
      if ((row.leaseUntil ?? 0) > now) return outcome(row, 'not_ambiguous', 'dispatch_lease_live');
      const marked = await expireDispatchingLease(this.deps.ledger, row, this.by, now);
      if (marked.kind !== 'ok') return this.raced(row, marked.current);
      row = marked.record;
    }
    if (row.state !== 'unknown') return outcome(row, 'not_ambiguous');
    // Provider events recorded while the row was still dispatching settle it before anything else.
    const settled = await this.deps.evidence?.applyRecordedEvidence(row);
    if (settled) return outcome(settled, 'resolved_by_evidence', 'recorded_evidence');

    const policy = this.deps.purposes.find(row.purpose);
    if (!policy) return this.quarantine(row, 'purpose_not_registered', 'no_policy');
    const transport = this.transportFor(row);
    const deadlinePassed = now >= unknownSince(row) + policy.ambiguityDeadlineSeconds * 1000;
    const windowOpen = transport !== undefined && replayWindowOpen(row, transport, now);

    // 1. Lookup: the provider itself says what happened.
    const canLookup =
      transport?.lookup !== undefined &&
      (transport.capabilities.lookupByKey ||
        (transport.capabilities.lookupByProviderId && row.providerMessageId !== undefined));
    if (transport?.lookup && canLookup) {
      let found: LookupResult;
      try {
        found = await transport.lookup(row.idempotencyKey, row.providerMessageId);
      } catch (error) {
        found = {
          kind: 'unavailable',
          reason: `lookup_threw:${error instanceof Error ? error.name : 'unknown'}`,
        };
      }
      switch (found.kind) {
        case 'accepted':
          return this.resolve(row, policy, 'accepted', 'lookup:accepted', {
            providerMessageId: found.providerMessageId,
          });
        case 'rejected':
          return this.resolve(row, policy, 'rejected', `lookup:rejected:${found.reason}`);
        case 'not_found':
          // 2. Nothing was accepted. Only a provider that enforces the key may see this request again.
          if (windowOpen && !deadlinePassed) return outcome(row, 'left_for_replay', 'lookup_not_found');
          return this.quarantine(
            row,
            deadlinePassed
              ? 'ambiguity_deadline_passed:lookup_not_found'
              : 'lookup_not_found:no_replay_window',
            deadlinePassed ? 'deadline_passed' : 'not_found_without_replay',
          );
        case 'unavailable':
          // Visible now, not only at the deadline: a 401 or a missing secret field is an operator's problem.
          this.deps.metrics?.count(METRIC.lookupsUnavailable);
          this.deps.logger?.warn('provider lookup unavailable', { dedupeKey: row.pk, reason: found.reason });
          if (!deadlinePassed) return outcome(row, 'waiting_for_lookup', found.reason);
          return this.quarantine(row, `ambiguity_deadline_passed:${found.reason}`, 'deadline_passed');
      }
    }
    // 2. No lookup, but the parked intent will replay under an enforced key.
    if (windowOpen && !deadlinePassed) return outcome(row, 'left_for_replay', 'replay_window_open');
    // 3. The provider pushes evidence: the evidence recorder settles it, until the deadline.
    if (transport?.capabilities.pushEvidence) {
      if (!deadlinePassed) return outcome(row, 'waiting_for_evidence');
      return this.quarantine(row, 'ambiguity_deadline_passed:no_evidence', 'deadline_passed');
    }
    // 4. Nothing can tell us, now or later.
    if (deadlinePassed) return this.quarantine(row, 'ambiguity_deadline_passed', 'deadline_passed');
    return this.quarantine(
      row,
      transport ? 'no_resolution_strategy' : `transport_not_configured:${row.transport ?? 'none'}`,
      'no_strategy',
    );
  }

  private transportFor(row: DeliveryRecord): Transport | undefined {
    return holderNamed(this.deps, row);
  }

  private async resolve(
    row: DeliveryRecord,
    policy: PurposePolicy,
    to: 'accepted' | 'rejected',
    why: string,
    set: TransitionRequest['set'] = {},
  ): Promise<RowOutcome> {
    const now = this.deps.clock.now();
    const result = await this.deps.ledger.transition({
      pk: row.pk,
      from: row.state,
      to,
      expectedVersion: row.version,
      by: this.by,
      why: boundWhy(why),
      set: { ...set, ttl: retentionTtl(policy, now) },
      now,
    });
    if (result.kind !== 'ok') return this.raced(row, result.current);
    this.deps.metrics?.count(METRIC.resolutions, 1, { strategy: 'lookup', outcome: to });
    this.deps.logger?.info('unknown outcome resolved', {
      dedupeKey: row.pk,
      channel: row.channel,
      state: to,
      why,
    });
    const fallbackAdvanced =
      to === 'rejected'
        ? await continueFallback(this.deps.ledger, result.record, this.deps.clock.now())
        : false;
    return {
      ...outcome(result.record, 'resolved_by_lookup', why),
      ...(fallbackAdvanced ? { fallbackAdvanced } : {}),
    };
  }

  private async quarantine(row: DeliveryRecord, why: string, reasonClass: string): Promise<RowOutcome> {
    const now = this.deps.clock.now();
    const result = await this.deps.ledger.transition({
      pk: row.pk,
      from: row.state,
      to: 'quarantined',
      expectedVersion: row.version,
      by: this.by,
      why: boundWhy(why),
      now,
    });
    if (result.kind !== 'ok') return this.raced(row, result.current);
    this.deps.metrics?.count(METRIC.quarantines, 1, { reason: reasonClass });
    this.deps.logger?.warn('unknown outcome quarantined for an operator', {
      dedupeKey: row.pk,
      channel: row.channel,
      why,
    });
    return outcome(result.record, 'quarantined', why);
  }

  private raced(row: DeliveryRecord, current?: DeliveryRecord): RowOutcome {
    this.deps.logger?.info('row moved under the reconciler; leaving it', {
      dedupeKey: row.pk,
      state: current?.state,
    });
    return outcome(current ?? row, 'raced');
  }
}

const outcome = (row: DeliveryRecord, action: RowAction, why?: string): RowOutcome => ({
  dedupeKey: row.pk,
  action,
  state: row.state,
  ...(why ? { why } : {}),
});

const summarize = (
  outcomes: RowOutcome[],
  cursor: string | undefined,
  pages: number,
): ReconcileRunSummary => ({
  processed: outcomes.length,
  resolved: outcomes.filter((o) => o.action === 'resolved_by_lookup' || o.action === 'resolved_by_evidence')
    .length,
  quarantined: outcomes.filter((o) => o.action === 'quarantined').length,
  left: outcomes.filter((o) =>
    ['left_for_replay', 'waiting_for_evidence', 'waiting_for_lookup'].includes(o.action),
  ).length,
  raced: outcomes.filter((o) => o.action === 'raced').length,
  ...(cursor ? { cursor } : {}),
  hasMore: cursor !== undefined,
  pages,
  outcomes,
});

/** When the row became unknown: the attention index's timestamp, else the history entry. */
export const unknownSince = (row: DeliveryRecord): number =>
  row.attnAt ?? [...row.history].reverse().find((entry) => entry.s === 'unknown')?.at ?? row.updatedAt;
