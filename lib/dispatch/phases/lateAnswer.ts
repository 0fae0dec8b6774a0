import { isReplay } from '../../domain/resume.js';
import type { DeliveryRecord } from '../../ledger/port.js';
import { METRIC } from '../../observability.js';
import type { SendResult } from '../../transports/port.js';
import { type ChannelRun, done, type LostRace, move, type Step, ttlFor } from '../run.js';

/**
 * late answer: the row moved while the provider answered — a redelivery found the lease expired, or the
 * reconciler or an operator marked it `unknown`. A definite answer for this very attempt is still the
 * truth about it, so it is applied to the unknown row instead of being thrown away. Anything else stays
 * as it is (the lost race goes back to the driver).
 */
export const lateAnswer = async (
  run: ChannelRun,
  ours: DeliveryRecord,
  result: SendResult,
  lost: LostRace,
): Promise<Step> => {
  const { ctx } = run;
  const current = lost.current ?? (await ctx.ledger.get(ours.pk));
  const definite = result.kind === 'accepted' || (result.kind === 'rejected' && !isReplay(ours));
  if (current?.state !== 'unknown' || current.attempts !== ours.attempts || !definite) throw lost;
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
