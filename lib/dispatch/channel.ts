import { contentHash } from '../domain/content.js';
import { SendproofError } from '../domain/errors.js';
import { deriveDedupeKey, identityOf } from '../domain/keys.js';
import type { Channel } from '../domain/purposes.js';
import { METRIC } from '../observability.js';
import type { RenderedMessage } from '../templates/port.js';
import { settleExpiredDispatching } from './phases/claim.js';
import type { ChannelRun, DispatchContext, Job } from './run.js';
import { recordInvalidChannel } from './sideRows.js';
import type { ChannelOutcome } from './types.js';

/**
 * Opens one channel of an intent for the phases: renders it (the content hash is the HMAC of what would
 * be sent) and names its row. A template that no longer renders is a permanent refusal, recorded beside
 * the row; nothing is claimed for it.
 */
export const openChannel = async (
  ctx: DispatchContext,
  job: Job,
  channel: Channel,
): Promise<{ run: ChannelRun } | { outcome: ChannelOutcome }> => {
  const { intent, policy } = job.valid;
  const key = deriveDedupeKey(identityOf(intent, policy, channel));
  let rendered: RenderedMessage;
  try {
    rendered = render(ctx, job, channel);
  } catch (error) {
    if (!(error instanceof SendproofError && error.kind === 'permanent')) throw error;
    // The revision is gone or the data no longer renders. An in-flight row of this key must still be
    // settled (its lease and state first), then the refusal is recorded beside it.
    const existing = await ctx.ledger.get(key.readable);
    if (existing) await settleExpiredDispatching(ctx, existing);
    await recordInvalidChannel(ctx, job.valid, channel, key.readable, error);
    ctx.metrics?.count(METRIC.intentsInvalid);
    return { outcome: { channel, dedupeKey: key.readable, state: 'invalid', action: 'render_failed' } };
  }
  return {
    run: {
      ctx,
      job,
      channel,
      transport: ctx.transports[channel],
      rendered,
      hash: contentHash(rendered.content, ctx.contentHashKey),
      dedupeKey: key.readable,
    },
  };
};

const render = (ctx: DispatchContext, job: Job, channel: Channel): RenderedMessage => {
  const { intent } = job.valid;
  return ctx.renderer.render({
    templateId: intent.template.id,
    revision: intent.template.revision,
    channel,
    ...(intent.locale ? { locale: intent.locale } : {}),
    data: intent.data ?? {},
    secrets: intent.secrets ?? {},
    ...(channel === 'email' && intent.attachments
      ? {
          attachments: intent.attachments.map((a) => ({
            filename: a.filename,
            contentType: a.contentType,
            sha256: a.sha256,
          })),
        }
      : {}),
  });
};
