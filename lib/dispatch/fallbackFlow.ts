import { SendproofError } from '../domain/errors.js';
import { definitivelyFailed } from '../domain/resume.js';
import { deliverChannel } from './driver.js';
import { park } from './parking.js';
import type { DispatchContext, Job } from './run.js';
import type { ChannelOutcome } from './types.js';

/**
 * Fallback: the logical notification's flow pointer names the one channel that may be active. The next
 * channel is authorized only after the active one definitively failed — never while it is unknown,
 * dispatching or waiting to retry. While the active channel is unknown nothing is parked in the queue:
 * the intent is sealed, and whoever settles the channel (reconciler, evidence, operator) moves the
 * pointer and wakes the seal, so the ledger's sweep sends the next channel.
 */
export const deliverFallback = async (ctx: DispatchContext, job: Job): Promise<ChannelOutcome[]> => {
  const { intent } = job.valid;
  let flow = await ctx.ledger.openFlow(job.logicalKey, [...intent.channels]);
  const outcomes: ChannelOutcome[] = [];
  for (;;) {
    const channel = flow.order[flow.activeIndex]!;
    if (!intent.channels.includes(channel)) return outcomes;
    const outcome = await deliverChannel(ctx, job, channel);
    outcomes.push(outcome);
    const isLast = flow.activeIndex >= flow.order.length - 1;
    if (outcome.action === 'retry_later') return outcomes;
    if (!definitivelyFailed(outcome.state) || isLast) {
      if (!isLast && (outcome.state === 'unknown' || outcome.state === 'quarantined')) {
        const policy = job.valid.policy;
        await park(
          ctx,
          job,
          'fallback_waits_for_active',
          ctx.clock.now() + policy.ambiguityDeadlineSeconds * 1000,
        );
        outcomes[outcomes.length - 1] = { ...outcome, action: 'waiting_for_active_channel' };
      }
      return outcomes;
    }
    const advanced = await ctx.ledger.advanceFlow(job.logicalKey, flow.activeIndex, flow.version);
    const current = advanced ?? (await ctx.ledger.getFlow(job.logicalKey));
    if (!current)
      throw new SendproofError('retryable', 'flow_missing', `fallback flow ${job.logicalKey} disappeared`);
    if (current.activeIndex <= flow.activeIndex) {
      // Another worker holds the pointer at a different version; re-read on the next delivery.
      outcomes[outcomes.length - 1] = { ...outcome, action: 'retry_later', dueAt: ctx.clock.now() };
      return outcomes;
    }
    ctx.logger.info('fallback advanced', {
      logicalKey: job.logicalKey,
      from: channel,
      to: current.order[current.activeIndex],
    });
    flow = current;
  }
};
