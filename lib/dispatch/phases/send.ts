import { isReplay } from '../../domain/resume.js';
import type { DeliveryRecord } from '../../ledger/port.js';
import { METRIC } from '../../observability.js';
import { labelKeyOf, sealLabel } from '../../transports/labels.js';
import type { OutboundMessage, SendResult } from '../../transports/port.js';
import { afterProbe } from '../hold.js';
import { type ChannelRun, done, move, providerHolds, type Step, ttlFor } from '../run.js';

/**
 * send: the provider call, with the row's idempotency key (the same on every retry and replay). Nothing
 * is written; the answer goes to the record phase. Admission learns from the answer (a 429 slows the pace).
 *
 * First, for an admitted send (not a replay), the SMS spend breaker counts it: here, after this
 * dispatcher's own `dispatching` write, so a duplicate whose claim conflicted is never counted. A refusal
 * ends the row `blocked` before anything leaves (its pace token goes back with the channel's end).
 */
export const send = async (run: ChannelRun, row: DeliveryRecord): Promise<Step> => {
  const { admission } = run.ctx;
  if (admission && run.admitted && !isReplay(row)) {
    const spend = await admission.beforeSend(run.ticket);
    if (spend.kind === 'refuse') {
      const blocked = await move(run.ctx, row, 'blocked', spend.why, {
        ttl: ttlFor(run, run.ctx.clock.now()),
      });
      run.ctx.metrics?.count(METRIC.blocked);
      return done(blocked, 'blocked');
    }
  }
  const result = await call(run, row);
  admission?.observe(run.transport.name, result);
  await afterProbe(run, result);
  await observeHealth(run, result);
  run.admitted = false;
  delete run.ticket;
  return { next: 'record', row, result };
};

/** The provider's circuit learns from the answer (a failure counts; a probe's answer decides). */
const observeHealth = async (run: ChannelRun, result: SendResult): Promise<void> => {
  const { circuits } = run.ctx;
  if (!circuits) return;
  try {
    await circuits.observe(run.transport.name, result, run.probe === true);
  } catch (error) {
    // The circuit is advice: a failed health write must not lose the answer the record phase needs.
    run.ctx.logger.warn('provider health not recorded', {
      provider: run.transport.name,
      error: error instanceof Error ? error.name : 'unknown',
    });
  }
  run.probe = false;
};

const call = async (run: ChannelRun, row: DeliveryRecord): Promise<SendResult> => {
  const { intent } = run.job.valid;
  const { rendered, channel } = run;
  const to = channel === 'email' ? intent.recipient.email : intent.recipient.phone;
  if (!to)
    return {
      kind: 'rejected',
      reason: 'no destination for channel',
      code: 'missing_destination',
      cause: 'recipient',
    };
  const message: OutboundMessage = {
    channel,
    to,
    ...(rendered.content.subject !== undefined ? { subject: rendered.content.subject } : {}),
    text: rendered.content.text,
    ...(rendered.content.html !== undefined ? { html: rendered.content.html } : {}),
    ...(run.attachments ? { attachments: run.attachments } : {}),
    dedupeKey: row.pk,
    // The only identifier the provider sees: opaque, and authenticated under the deployment's secret.
    label: sealLabel(labelKeyOf(run.ctx.contentHashKey), row.pk),
    ...(run.job.valid.expiresAtMs !== undefined ? { expiresAtMs: run.job.valid.expiresAtMs } : {}),
    ...(providerHolds(run, run.ctx.clock.now()) ? { sendAtMs: run.job.valid.sendAtMs! } : {}),
  };
  run.handedAt = message.sendAtMs;
  try {
    return await run.transport.send(message, row.idempotencyKey);
  } catch (error) {
    // An adapter bug or an unexpected throw after the request may have left: never assume it did not.
    return {
      kind: 'ambiguous',
      reason: `transport_threw:${error instanceof Error ? error.name : 'unknown'}`,
    };
  }
};
