import type { Clock } from '../domain/clock.js';
import { SendproofError } from '../domain/errors.js';
import type { PurposeRegistry } from '../domain/purposes.js';
import { retentionTtl } from '../domain/purposes.js';
import type { DeliveryState } from '../domain/states.js';
import { continueFallback } from '../ledger/flows.js';
import type { DeliveryRecord, Ledger, SuppressionList } from '../ledger/port.js';
import type { RunLogger as ReconcileLogger, MetricsSink as ReconcileMetricsSink } from '../observability.js';
import { METRIC } from '../observability.js';
import type { EvidenceStore, StoredEvent } from './DynamoEvidenceStore.js';
import type { Evidence, EvidenceSource, ProviderEvidence } from './events.js';
import {
  addsNothing,
  compactFact,
  type DeliveryFactEntry,
  fallbackFactsOf,
  holdsEvidence,
  SUPPRESSING,
  settlesTo,
  withFact,
} from './facts.js';
import { authenticateEvidence, type EvidenceRefusal, type LabelKeys, namesRowMessage } from './labelAuth.js';

export interface EvidenceRecorderDeps {
  ledger: Ledger;
  store: EvidenceStore;
  purposes: PurposeRegistry;
  clock: Clock;
  /** The deployment's label keys: every event's label is opened with them first (lib/evidence/labelAuth.ts). */
  labels: LabelKeys;
  /** Permanent bounces and complaints add the recipient here (per tenant, per channel). */
  suppressions?: SuppressionList;
  logger?: ReconcileLogger;
  metrics?: ReconcileMetricsSink;
}

/**
 * - recorded: an `unknown`/`quarantined` row moved to the evidence's outcome;
 * - fact_recorded: an accepted row gained a delivery fact (delivered, bounced, complained, …);
 * - duplicate: this provider event was already applied to the row;
 * - redundant: a fact the row already implies (the `Send` of the message an accepted row records, a
 *   second open or click of one message): logged and counted, no write anywhere;
 * - kept: recorded under the key hash; the row is in a state the event does not change now (still
 *   `dispatching`: applied when the row becomes `unknown`; already `rejected`; …);
 * - unmatched: no claim of ours carries this key hash (kept 30 days, counted);
 * - raced: the row moved to a state evidence no longer changes, under this recorder;
 * - refused: the label is not ours, or the event names another message than the row's (labelAuth.ts).
 * Every result says how many read units it cost (the budget: ≤ 2 whatever the backlog).
 */
export type EvidenceResult = { consumedReadUnits: number } & (
  | {
      kind: 'recorded' | 'fact_recorded';
      dedupeKey: string;
      state: DeliveryState;
      fallbackAdvanced: boolean;
      suppressed: boolean;
    }
  | { kind: 'duplicate'; dedupeKey: string }
  | { kind: 'redundant'; dedupeKey: string; state: DeliveryState }
  | { kind: 'kept'; dedupeKey: string; state: DeliveryState }
  | { kind: 'unmatched' }
  | { kind: 'raced'; dedupeKey: string; state: DeliveryState }
  | { kind: 'refused'; reason: EvidenceRefusal }
);

/** `when a row enters unknown, settle it from recorded evidence at once` — what the dispatcher and reconciler call. */
export interface RecordedEvidence {
  /** The row settled by evidence recorded earlier, or undefined when there was none (the row is unchanged). */
  applyRecordedEvidence(row: DeliveryRecord): Promise<DeliveryRecord | undefined>;
}

const WAITING: readonly DeliveryState[] = ['unknown', 'quarantined'];
/**
 * Rows on which post-acceptance facts are recorded: the provider has the message (a provider-held one
 * included: a bounce of it is a bounce, whether or not the sweep has settled it `accepted` yet).
 */
const ACCEPTED: readonly DeliveryState[] = ['accepted', 'resolved_accepted', 'provider_scheduled'];
/**
 * Rows whose outcome is not written yet: an event for one is kept and the row marked (`evk`), so the
 * write that moves it to an outcome applies it (applyRecordedEvidence).
 */
const UNSETTLED: readonly DeliveryState[] = ['claimed', 'dispatching', 'retry_wait'];

/** Tolerance between the claiming worker's clock and the evidence function's. */
const CLOCK_SKEW_MS = 5 * 60_000;

type Applied = { result: EvidenceResult; row?: DeliveryRecord };

const fromStored = (e: StoredEvent, idempotencyKey: string): Evidence => ({
  source: e.src,
  evidenceId: e.id,
  idempotencyKey,
  fact: e.f,
  outcome: settlesTo(e.f),
  providerMessageId: e.msg,
  why: e.why,
  at: e.at,
});

/**
 * Records provider evidence. Every event is kept once under its key hash (`ev#<hash>`, one write),
 * whatever the row's state; then the row is read by its key (one GetItem) — the key the event names in
 * its row label, or for an event without one, the pointer its claim wrote in `ev#<hash>` (the write
 * returns it) — and the event applied if the row's state lets it:
 * - `unknown`/`quarantined`: settled to the event's outcome (a version- and event-id-conditioned transition);
 * - `accepted`: the fact is added to the row's `delivery` attribute (conditioned on the event id);
 * - anything else: kept; `applyRecordedEvidence` settles the row when it becomes `unknown`.
 * Then the effects, idempotent so a redelivered event finishes what a crash interrupted: permanent
 * bounces and complaints suppress the recipient; a definitive failure moves the fallback pointer on.
 */
export class EvidenceRecorder implements RecordedEvidence {
  constructor(private readonly deps: EvidenceRecorderDeps) {}

  async record(input: ProviderEvidence): Promise<EvidenceResult> {
    const authentic = authenticateEvidence(input, await this.deps.labels());
    if (!authentic.ok) return this.refused(input.source, input.evidenceId, authentic.reason, 0);
    const { evidence } = authentic;
    const now = this.deps.clock.now();
    let reads = 0;
    let known: DeliveryRecord | undefined;
    if (evidence.rowKey !== undefined) {
      // The event names its row: read it first. An accepted row takes the fact directly, with no
      // evidence item (its `delivery` attribute is the record, and the stream archives it); so does a
      // waiting row, which the event settles.
      const first = await this.deps.store.getRow(evidence.rowKey);
      reads += first.consumedReadUnits;
      const row = first.row;
      if (row && row.idempotencyKey === evidence.idempotencyKey) {
        // A row that holds a provider message id takes only events about that message (labelAuth.ts).
        if (!namesRowMessage(row, evidence))
          return this.refused(evidence.source, evidence.evidenceId, 'message_id_mismatch', reads);
        if (ACCEPTED.includes(row.state) || WAITING.includes(row.state)) {
          if (WAITING.includes(row.state))
            await this.deps.store.append(evidence, now, this.retentionOf(row, now));
          const applied = await this.apply(row, evidence);
          return { ...applied.result, consumedReadUnits: applied.result.consumedReadUnits + reads };
        }
        known = row;
      }
    }
    // Kept for later, or found through the pointer its claim wrote: recorded under the key hash first, so
    // a row that moves meanwhile finds it (then read, or read again).
    const appended = await this.deps.store.append(evidence, now, known ? this.retentionOf(known, now) : {});
    reads += appended.consumedReadUnits;
    if (appended.full) {
      this.deps.metrics?.count(METRIC.evidenceNotKept, 1, { source: evidence.source });
      this.deps.logger?.warn('evidence item full: event not kept', {
        evidenceId: evidence.evidenceId,
        why: evidence.why,
      });
    }
    if (!appended.ref) return this.unmatched(evidence, reads);
    const got = await this.deps.store.getRow(appended.ref);
    reads += got.consumedReadUnits;
    // Found through the claim's pointer: the item expires with the row it points to.
    const keep = got.row && !known ? this.retentionOf(got.row, now).ttl : undefined;
    if (keep !== undefined && (appended.ttl ?? 0) < keep)
      await this.deps.store.expireWith(evidence.idempotencyKey, keep);
    if (!got.row) {
      // A row label naming no row (another deployment's message, or a row past its retention).
      if (evidence.rowKey !== undefined) await this.deps.store.expireUnmatched(evidence.idempotencyKey, now);
      return this.unmatched(evidence, reads);
    }
    if (got.row.idempotencyKey !== evidence.idempotencyKey) return this.unmatched(evidence, reads);
    if (!namesRowMessage(got.row, evidence))
      return this.refused(evidence.source, evidence.evidenceId, 'message_id_mismatch', reads);
    const applied = await this.apply(got.row, evidence);
    return { ...applied.result, consumedReadUnits: applied.result.consumedReadUnits + reads };
  }

  async applyRecordedEvidence(input: DeliveryRecord): Promise<DeliveryRecord | undefined> {
    // A waiting row: whatever is recorded for its hash. A row just moved to an outcome: only when an event
    // was kept for it while it had none (the row carries `evk`), so the happy path reads nothing more.
    const marked = ACCEPTED.includes(input.state) && input.evk === true;
    if (!WAITING.includes(input.state) && !marked) return undefined;
    const stored = await this.deps.store.eventsFor(input.idempotencyKey);
    // Events recorded before this row was claimed belong to an earlier row of the same key (expired,
    // its item not yet): never evidence about this one.
    const events = stored.events.filter(
      (e) =>
        !holdsEvidence(input, e.id) &&
        e.rec >= input.createdAt - CLOCK_SKEW_MS &&
        // Only events about the row's own message, when the provider already named one (labelAuth.ts).
        namesRowMessage(input, e),
    );
    if (events.length === 0) return undefined;
    // Settle with the earliest event that proves the provider had the message, else the earliest
    // failure; then apply the others as facts, in the provider's order.
    const byTime = [...events].sort((a, b) => a.at - b.at || a.rec - b.rec);
    const first = (marked ? undefined : byTime.find((e) => settlesTo(e.f) === 'accepted')) ?? byTime[0]!;
    const ordered = [first, ...byTime.filter((e) => e !== first)];
    let row = input;
    try {
      for (const event of ordered) {
        const applied = await this.apply(row, fromStored(event, input.idempotencyKey));
        if (applied.row) row = applied.row;
      }
    } catch (error) {
      // Raced twice by other writers: the row stays as the ledger has it; the reconciler comes back.
      if (!(error instanceof SendproofError && error.code === 'evidence_raced')) throw error;
    }
    if (row.state === input.state && row.version === input.version) return undefined;
    this.deps.logger?.info('recorded evidence applied', {
      dedupeKey: row.pk,
      from: input.state,
      state: row.state,
      events: ordered.length,
    });
    return row;
  }

  private refused(
    source: EvidenceSource,
    evidenceId: string,
    reason: EvidenceRefusal,
    consumedReadUnits: number,
  ): EvidenceResult {
    this.deps.metrics?.count(METRIC.evidenceRefused, 1, { source, reason });
    this.deps.logger?.warn('evidence refused', { evidenceId, source, reason });
    return { kind: 'refused', reason, consumedReadUnits };
  }

  /**
   * How long a row's evidence item lives: as long as the row (its TTL once it has one, else the purpose's
   * retention from now), so a key reused after its row expired never inherits the old events.
   */
  private retentionOf(row: DeliveryRecord, now: number): { ttl?: number } {
    if (row.ttl !== undefined) return { ttl: Math.max(row.ttl, Math.floor(now / 1000)) };
    const policy = this.deps.purposes.find(row.purpose);
    return policy ? { ttl: retentionTtl(policy, now) } : {};
  }

  private unmatched(evidence: Evidence, consumedReadUnits: number): EvidenceResult {
    this.deps.metrics?.count(METRIC.evidenceUnmatched, 1, { source: evidence.source });
    this.deps.logger?.info('evidence for no row of ours', {
      evidenceId: evidence.evidenceId,
      why: evidence.why,
    });
    return { kind: 'unmatched', consumedReadUnits };
  }

  /** The fact as the row stores it (compact, relative to the message id the row has or now gets). */
  private entryOf(evidence: Evidence, rowMessageId: string | undefined): DeliveryFactEntry {
    return compactFact(
      {
        f: evidence.fact,
        at: evidence.at ?? this.deps.clock.now(),
        by: `evidence:${evidence.source}`,
        why: evidence.why,
        id: evidence.evidenceId,
        ...(evidence.providerMessageId ? { msg: evidence.providerMessageId } : {}),
      },
      rowMessageId,
    );
  }

  private async apply(start: DeliveryRecord, evidence: Evidence): Promise<Applied> {
    let row: DeliveryRecord | undefined = start;
    const reads = 0;
    // Three tries: concurrent writers (the reconciler, another event for this row) may move the row.
    for (let attempt = 0; row && attempt < 3; attempt += 1) {
      if (holdsEvidence(row, evidence.evidenceId)) {
        const effects = await this.effects(row, evidence);
        return {
          result: { kind: 'duplicate', dedupeKey: row.pk, consumedReadUnits: reads + effects.reads },
          row,
        };
      }
      if (WAITING.includes(row.state)) {
        const now = this.deps.clock.now();
        const policy = this.deps.purposes.find(row.purpose);
        const to = settlesTo(evidence.fact);
        const messageId = evidence.providerMessageId || row.providerMessageId;
        const delivery = {
          ...withFact(row.delivery, this.entryOf(evidence, messageId)),
          n: (row.delivery?.n ?? 0) + 1,
        };
        const result = await this.deps.ledger.transition({
          pk: row.pk,
          from: row.state,
          to,
          expectedVersion: row.version,
          by: `evidence:${evidence.source}`,
          why: evidence.why,
          evidenceId: evidence.evidenceId,
          set: {
            // An event that names no message (a SendGrid asynchronous bounce) leaves the row's id alone.
            ...(evidence.providerMessageId ? { providerMessageId: evidence.providerMessageId } : {}),
            delivery,
            ...(policy ? { ttl: retentionTtl(policy, now) } : {}),
          },
          now,
        });
        if (result.kind === 'ok') {
          this.deps.metrics?.count(METRIC.resolutions, 1, { strategy: 'evidence', outcome: to });
          this.countFact(result.record, evidence);
          this.deps.logger?.info('evidence recorded', {
            dedupeKey: row.pk,
            channel: row.channel,
            from: row.state,
            state: to,
            why: evidence.why,
            evidenceId: evidence.evidenceId,
          });
          const effects = await this.effects(result.record, evidence);
          return {
            result: {
              kind: 'recorded',
              dedupeKey: row.pk,
              state: to,
              fallbackAdvanced: effects.fallbackAdvanced,
              suppressed: effects.suppressed,
              consumedReadUnits: reads + effects.reads,
            },
            row: result.record,
          };
        }
        row = result.current ?? (await this.deps.store.getRow(row.pk)).row;
        continue;
      }
      if (ACCEPTED.includes(row.state)) {
        if (addsNothing(row, evidence)) {
          // Per event and on the happy path (the Send of an accepted message): debug, not INFO.
          this.deps.logger?.debug?.('provider event adds nothing to the row', {
            dedupeKey: row.pk,
            fact: evidence.fact,
            why: evidence.why,
            evidenceId: evidence.evidenceId,
          });
          return {
            result: { kind: 'redundant', dedupeKey: row.pk, state: row.state, consumedReadUnits: reads },
            row,
          };
        }
        const result = await this.deps.store.addFact(row, this.entryOf(evidence, row.providerMessageId));
        if (result.kind === 'ok') {
          this.countFact(result.record, evidence);
          // A delivery is the happy path and the row's history holds it: debug. A bounce, a complaint or a
          // delay is what an operator looks for, so it stays at INFO.
          const log = evidence.fact === 'delivered' ? this.deps.logger?.debug : this.deps.logger?.info;
          log?.call(this.deps.logger, 'delivery fact recorded', {
            dedupeKey: row.pk,
            channel: row.channel,
            fact: evidence.fact,
            why: evidence.why,
            evidenceId: evidence.evidenceId,
          });
          const effects = await this.effects(result.record, evidence);
          return {
            result: {
              kind: 'fact_recorded',
              dedupeKey: row.pk,
              state: row.state,
              fallbackAdvanced: effects.fallbackAdvanced,
              suppressed: effects.suppressed,
              consumedReadUnits: reads + effects.reads,
            },
            row: result.record,
          };
        }
        if (result.kind === 'duplicate') {
          return { result: { kind: 'duplicate', dedupeKey: row.pk, consumedReadUnits: reads }, row };
        }
        row = result.current ?? (await this.deps.store.getRow(row.pk)).row;
        continue;
      }
      // Claimed, dispatching, retry_wait: kept, and the row marked, conditioned on its version, so the
      // write that gives it an outcome sees the mark and applies what was kept (unknown rows read the
      // kept events anyway). Refused: the row moved meanwhile; read it again. Final states other than
      // accepted: kept as a record of what the provider said.
      if (UNSETTLED.includes(row.state) && row.evk !== true) {
        const marked = await this.deps.store.markKept(row);
        if (marked.kind === 'stale') {
          row = marked.current ?? (await this.deps.store.getRow(row.pk)).row;
          continue;
        }
      }
      return {
        result: { kind: 'kept', dedupeKey: row.pk, state: row.state, consumedReadUnits: reads },
        row,
      };
    }
    if (row && WAITING.includes(row.state)) {
      // Still waiting for exactly this evidence, yet every try another writer moved first: do not drop it.
      // Throwing fails the invocation, which is retried and then lands on the evidence DLQ.
      throw new SendproofError(
        'retryable',
        'evidence_raced',
        `evidence ${evidence.evidenceId} raced on ${row.pk}`,
      );
    }
    if (row)
      return {
        result: { kind: 'raced', dedupeKey: row.pk, state: row.state, consumedReadUnits: reads },
        row,
      };
    return { result: { kind: 'unmatched', consumedReadUnits: reads } };
  }

  private countFact(row: DeliveryRecord, evidence: Evidence): void {
    this.deps.metrics?.count(METRIC.deliveryFacts, 1, {
      fact: evidence.fact,
      channel: row.channel,
      purpose: row.purpose,
    });
  }

  /**
   * What a fact does beyond the row, each step idempotent (a redelivered event runs them again):
   * - permanent bounce, complaint → the recipient ref is suppressed on the row's channel, per tenant;
   * - the row settled `rejected`, or an accepted row's fact is in the purpose's `fallbackOn` → the
   *   fallback pointer moves on from this channel (continueFallback), and the next channel may go out.
   */
  private async effects(
    row: DeliveryRecord,
    evidence: Evidence,
  ): Promise<{ suppressed: boolean; fallbackAdvanced: boolean; reads: number }> {
    let suppressed = false;
    let reads = 0;
    if (SUPPRESSING.includes(evidence.fact) && this.deps.suppressions) {
      await this.deps.suppressions.suppress(
        row.tenant,
        row.recipientRef,
        row.channel,
        `${evidence.fact}:${evidence.why}`.slice(0, 120),
        {
          source: evidence.evidenceId,
          at: evidence.at ?? this.deps.clock.now(),
          by: `evidence:${evidence.source}`,
        },
      );
      suppressed = true;
    }
    const policy = this.deps.purposes.find(row.purpose);
    const definitive =
      row.state === 'rejected' ||
      (ACCEPTED.includes(row.state) && fallbackFactsOf(policy).includes(evidence.fact));
    let fallbackAdvanced = false;
    if (definitive) {
      reads += 1; // the flow pointer's strongly consistent GetItem
      fallbackAdvanced = await continueFallback(this.deps.ledger, row, this.deps.clock.now());
      if (fallbackAdvanced)
        this.deps.logger?.info('fallback continues after a definitive failure', {
          dedupeKey: row.pk,
          channel: row.channel,
          fact: evidence.fact,
        });
    }
    return { suppressed, fallbackAdvanced, reads };
  }
}
