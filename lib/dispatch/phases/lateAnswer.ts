import { isReplay } from '../../domain/resume.js';
import type { DeliveryRecord } from '../../ledger/port.js';
import { METRIC } from '../../observability.js';
import type { SendResult } from '../../transports/port.js';
import { type ChannelRun, done, type LostRace, move, type Step, ttlFor } from '../run.js';

/**
 * late answer: the row moved while the provider answered — a redelivery found the lease expired, or the
 * reconciler or an operator marked it `unknown`. A definite answer is still the truth about the request
 * this worker made, so it is applied to the unknown row instead of being thrown away — but only while it
 * is the truth about the row:
 *
 *   accepted  the provider holds a message under the row's key: applied to any `unknown` row.
 *   rejected  applied only when no request has left since the version this worker wrote (`ours`): the
 *             row's history after it holds no `dispatching` entry. A replay since then (same attempt
 *             count: replays spend none) may have been delivered, and its ambiguous answer must not be
 *             laundered into a rejection that authorizes a fallback (invariant 6).
 *
 * Anything else stays as it is (the lost race goes back to the driver).
 */
export const lateAnswer = async (
  run: ChannelRun,
  ours: DeliveryRecord,
  result: SendResult,
  lost: LostRace,
): Promise<Step> => {
  const { ctx } = run;
  const current = lost.current ?? (await ctx.ledger.get(ours.pk));
  if (current?.state !== 'unknown') throw lost;
  const definite =
    result.kind === 'accepted' ||
    (result.kind === 'rejected' && !isReplay(ours) && !requestLeftSince(current, ours));
  if (!definite) throw lost;
  const now = ctx.clock.now();
  const settled =
    result.kind === 'accepted'
      ? await move(ctx, current, 'accepted', 'late_provider_answer', {
          providerMessageId: result.providerMessageId,
          ttl: ttlFor(run, now),
        })
      : await move(
          ctx,
          current,
          'rejected',
          `late_provider_answer:${result.kind === 'rejected' ? (result.code ?? result.reason) : ''}`,
          { ttl: ttlFor(run, now) },
        );
  ctx.metrics?.count(result.kind === 'accepted' ? METRIC.accepted : METRIC.rejected);
  ctx.logger.info('late provider answer applied to an unknown row', {
    dedupeKey: ours.pk,
    channel: run.channel,
    state: settled.state,
  });
  return done(settled, 'late_answer_applied', {
    ...(result.kind === 'accepted' ? { providerMessageId: result.providerMessageId } : {}),
  });
};

/**
 * Whether another request under the row's key may have left after the version this worker wrote: a
 * `dispatching` entry after it in the append-only history (every write appends exactly one entry, so
 * the entries after `ours.history.length` are the writes since).
 */
const requestLeftSince = (current: DeliveryRecord, ours: DeliveryRecord): boolean =>
  current.history.slice(ours.history.length).some((entry) => entry.s === 'dispatching');
