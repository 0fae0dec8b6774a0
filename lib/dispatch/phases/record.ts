import { retentionTtl } from '../../domain/purposes.js';
import { isReplay } from '../../domain/resume.js';
import type { DeliveryRecord } from '../../ledger/port.js';
import { METRIC } from '../../observability.js';
import { CIRCUIT_METRIC } from '../../transports/circuitMetric.js';
import type { SendResult } from '../../transports/port.js';
import { holdTransport } from '../hold.js';
import { recordOptOut } from '../optOut.js';
import { park } from '../parking.js';
import { nextProvider, provesNotTaken } from '../providers.js';
import { type ChannelRun, delayFor, done, iso, LostRace, move, type Step, ttlFor } from '../run.js';
import { cancelHeld } from './confirm.js';
import { parkForReplay } from './wait.js';

/**
 * record: the provider's answer becomes the row's outcome — accepted | provider_scheduled | rejected |
 * unknown | retry_wait — in one conditioned write. A replay's non-accepted answer is evidence, never an
 * outcome. When the write is refused (the row moved while the provider answered), the late-answer phase
 * decides what the answer still proves.
 */
export const record = async (run: ChannelRun, row: DeliveryRecord, result: SendResult): Promise<Step> => {
  try {
    return await outcome(run, row, result);
  } catch (error) {
    if (error instanceof LostRace) return { next: 'late_answer', row, result, lost: error };
    throw error;
  }
};

const outcome = async (run: ChannelRun, row: DeliveryRecord, result: SendResult): Promise<Step> => {
  const { ctx } = run;
  const now = ctx.clock.now();
  const attempts = row.attempts;
  if (result.kind === 'accepted' && run.handedAt !== undefined && run.handedAt > now) {
    // Accepted, and held by the provider until sendAt: the sweep settles it then; a cancel may stop it.
    const held = await move(ctx, row, 'provider_scheduled', `provider_holds_until:${iso(run.handedAt)}`, {
      providerMessageId: result.providerMessageId,
      attempts,
      nextAttemptAt: run.handedAt,
      // Counted from sendAt: the row the sweep settles `accepted` then keeps the purpose's retention.
      ttl: retentionTtl(run.job.valid.policy, run.handedAt),
    });
    await park(ctx, run.job, 'provider_scheduled', run.handedAt + ctx.parkGraceMs);
    // A cancel committed while the request was in flight is carried out at the provider now.
    const cancelled = await cancelHeld(run, held);
    if (cancelled) return cancelled;
    return done(held, 'handed_to_provider_schedule', { providerMessageId: result.providerMessageId });
  }
  if (result.kind === 'accepted') {
    const accepted = await move(
      ctx,
      row,
      'accepted',
      result.replayed ? 'provider_replayed_original' : 'provider_accepted',
      { providerMessageId: result.providerMessageId, attempts, ttl: ttlFor(run, now) },
    );
    ctx.metrics?.count(METRIC.accepted);
    return done(accepted, 'sent', { providerMessageId: result.providerMessageId });
  }
  if (isReplay(row)) {
    // A replay asked "do you have this key?". Any answer but the original message is evidence, not an
    // outcome: back to unknown, no attempt spent, never rejected. Even `invalid_idempotent_request`
    // proves only that the provider holds the key.
    const detail = result.kind === 'rejected' ? (result.code ?? result.reason) : result.reason;
    const back = await move(ctx, row, 'unknown', `replay_answer:${result.kind}:${detail}`, { attempts });
    ctx.metrics?.count(METRIC.unknown);
    const settled = await ctx.evidence?.applyRecordedEvidence(back);
    if (settled) return done(settled, 'settled_by_recorded_evidence');
    const delay = delayFor(ctx, attempts, result.kind === 'retryable' ? result.retryAfterMs : undefined);
    return parkForReplay(run, back, 'marked_unknown', delay);
  }
  const failover = await failOver(run, row, result);
  if (failover) return failover;
  switch (result.kind) {
    case 'rejected': {
      if (result.cause === 'opted_out') return recordOptOut(run, row, result);
      const rejected = await move(ctx, row, 'rejected', `provider_rejected:${result.code ?? result.reason}`, {
        attempts,
        ttl: ttlFor(run, now),
      });
      ctx.metrics?.count(METRIC.rejected);
      return done(rejected, 'rejected_by_provider');
    }
    case 'ambiguous': {
      const unknown = await move(ctx, row, 'unknown', `ambiguous:${result.reason}`, { attempts });
      ctx.metrics?.count(METRIC.unknown);
      ctx.logger.warn('provider outcome unknown; left for reconciliation', {
        dedupeKey: row.pk,
        channel: run.channel,
        reason: result.reason,
      });
      const settled = await ctx.evidence?.applyRecordedEvidence(unknown);
      if (settled) return done(settled, 'settled_by_recorded_evidence');
      return parkForReplay(run, unknown, 'marked_unknown');
    }
    case 'retryable': {
      // A hold (a quota, a paused account) is about the transport, not this row: it spends no budget.
      if (result.hold) return holdTransport(run, row, { ...result, hold: result.hold });
      if (attempts >= run.job.valid.policy.maxAttempts && !result.hold) {
        const exhausted = await move(ctx, row, 'rejected', `retry_budget_exhausted:${result.reason}`, {
          attempts,
          ttl: ttlFor(run, now),
        });
        ctx.metrics?.count(METRIC.rejected);
        return done(exhausted, 'retry_budget_exhausted');
      }
      const delayMs = delayFor(ctx, attempts, result.retryAfterMs);
      const waiting = await move(ctx, row, 'retry_wait', `retryable:${result.reason}`, {
        attempts,
        nextAttemptAt: now + delayMs,
      });
      ctx.metrics?.count(METRIC.retries);
      return { next: 'wait', row: waiting, delayMs };
    }
  }
};

/**
 * A definite non-acceptance the next provider may follow (lib/dispatch/providers.ts): the row waits in
 * `retry_wait` naming the next provider (`failover:<from>><to>:<answer>`) and the next attempt goes
 * there at once, through every gate again. A failover is not a retry of the same request: the next
 * provider gets its attempt even when the retry budget is spent (the provider list bounds it).
 */
const failOver = async (
  run: ChannelRun,
  row: DeliveryRecord,
  result: SendResult,
): Promise<Step | undefined> => {
  if (!provesNotTaken(result)) return undefined;
  const next = nextProvider(run, row);
  if (!next) return undefined;
  const { ctx } = run;
  const from = run.transport.name;
  const answer =
    result.kind === 'rejected'
      ? (result.code ?? result.reason)
      : result.kind === 'accepted'
        ? ''
        : result.reason;
  const moved = await move(ctx, row, 'retry_wait', `failover:${from}>${next.name}:${answer}`, {
    attempts: row.attempts,
    transport: next.name,
    nextAttemptAt: ctx.clock.now(),
  });
  ctx.metrics?.count(CIRCUIT_METRIC.failovers, 1, { provider: from });
  ctx.logger.info('row moved to the next provider', {
    dedupeKey: row.pk,
    channel: run.channel,
    from,
    to: next.name,
    answer: result.kind,
  });
  return { next: 'wait', row: moved, delayMs: 0 };
};
