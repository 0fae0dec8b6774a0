import type { Clock } from '../domain/clock.js';
import { SendproofError } from '../domain/errors.js';
import type { PurposeRegistry } from '../domain/purposes.js';
import { retentionTtl } from '../domain/purposes.js';
import type { DeliveryRecord, Ledger } from '../ledger/port.js';
import { METRIC } from '../observability.js';
import { continueFallback } from '../reconcile/fallback.js';
import type { ReconcileLogger, ReconcileMetricsSink } from '../reconcile/Reconciler.js';
import type { Evidence } from './events.js';

export interface EvidenceRecorderDeps {
  ledger: Ledger;
  purposes: PurposeRegistry;
  clock: Clock;
  logger?: ReconcileLogger;
  metrics?: ReconcileMetricsSink;
}

/**
 * - recorded: the row moved to the evidence's outcome;
 * - duplicate: this provider event was already recorded on the row;
 * - no_waiting_row: no unknown/quarantined row carries this key (already final, still dispatching, or
 *   not ours): evidence only settles rows that are waiting for it;
 * - raced: the row moved to a state evidence no longer changes, under this recorder.
 */
export type EvidenceResult =
  | { kind: 'recorded'; dedupeKey: string; state: DeliveryRecord['state']; fallbackAdvanced: boolean }
  | { kind: 'duplicate'; dedupeKey: string }
  | { kind: 'no_waiting_row' }
  | { kind: 'raced'; dedupeKey: string; state: DeliveryRecord['state'] };

const WAITING: readonly DeliveryRecord['state'][] = ['unknown', 'quarantined'];

/**
 * Records provider-pushed evidence against the row found through the key hash. Idempotent: the provider
 * event id travels as the transition's `evidenceId`, which the ledger refuses if already recorded, and
 * the transition is conditioned on the version read, so a repeated or concurrent event moves a row once.
 */
export class EvidenceRecorder {
  constructor(private readonly deps: EvidenceRecorderDeps) {}

  async record(evidence: Evidence): Promise<EvidenceResult> {
    const found = await this.deps.ledger.findWaitingByIdempotencyKey(evidence.idempotencyKey, WAITING);
    let row = found.record;
    // Two tries: a concurrent writer (the reconciler, another copy of this event) may move the row once.
    for (let attempt = 0; row && attempt < 2; attempt += 1) {
      if (row.evidenceIds?.includes(evidence.evidenceId)) return { kind: 'duplicate', dedupeKey: row.pk };
      if (!WAITING.includes(row.state)) return { kind: 'raced', dedupeKey: row.pk, state: row.state };
      const now = this.deps.clock.now();
      const policy = this.deps.purposes.find(row.purpose);
      const result = await this.deps.ledger.transition({
        pk: row.pk,
        from: row.state,
        to: evidence.outcome,
        expectedVersion: row.version,
        by: `evidence:${evidence.source}`,
        why: evidence.why,
        evidenceId: evidence.evidenceId,
        set: {
          providerMessageId: evidence.providerMessageId,
          ...(policy ? { ttl: retentionTtl(policy, now) } : {}),
        },
        now,
      });
      if (result.kind === 'ok') {
        this.deps.metrics?.count(METRIC.resolutions, 1, { strategy: 'evidence', outcome: evidence.outcome });
        this.deps.logger?.info('evidence recorded', {
          dedupeKey: row.pk,
          channel: row.channel,
          from: row.state,
          state: evidence.outcome,
          why: evidence.why,
          evidenceId: evidence.evidenceId,
        });
        const fallbackAdvanced =
          evidence.outcome === 'rejected'
            ? await continueFallback(this.deps.ledger, result.record, this.deps.clock.now())
            : false;
        return { kind: 'recorded', dedupeKey: row.pk, state: evidence.outcome, fallbackAdvanced };
      }
      row = result.current ?? (await this.deps.ledger.get(row.pk));
    }
    if (row && (row.state === 'unknown' || row.state === 'quarantined')) {
      // Still waiting for exactly this evidence, yet twice another writer moved first: do not drop it.
      // Throwing fails the invocation, which is retried and then lands on the evidence DLQ.
      throw new SendproofError(
        'retryable',
        'evidence_raced',
        `evidence ${evidence.evidenceId} raced on ${row.pk}`,
      );
    }
    if (row) return { kind: 'raced', dedupeKey: row.pk, state: row.state };
    this.deps.logger?.info('evidence for no waiting row', {
      evidenceId: evidence.evidenceId,
      why: evidence.why,
    });
    return { kind: 'no_waiting_row' };
  }
}
