import type { DeliveryRecord } from '../../ledger/port.js';
import type { OutboundMessage, SendResult } from '../../transports/port.js';
import { type ChannelRun, providerHolds, type Step } from '../run.js';

/**
 * send: the provider call, with the row's idempotency key (the same on every retry and replay). Nothing
 * is written; the answer goes to the record phase. Admission learns from the answer (a 429 slows the pace).
 */
export const send = async (run: ChannelRun, row: DeliveryRecord): Promise<Step> => {
  const result = await call(run, row);
  run.ctx.admission?.observe(run.transport.name, result);
  run.admitted = false;
  return { next: 'record', row, result };
};

const call = async (run: ChannelRun, row: DeliveryRecord): Promise<SendResult> => {
  const { intent } = run.job.valid;
  const { rendered, channel } = run;
  const to = channel === 'email' ? intent.recipient.email : intent.recipient.phone;
  if (!to) return { kind: 'rejected', reason: 'no destination for channel', code: 'missing_destination' };
  const message: OutboundMessage = {
    channel,
    to,
    ...(rendered.content.subject !== undefined ? { subject: rendered.content.subject } : {}),
    text: rendered.content.text,
    ...(rendered.content.html !== undefined ? { html: rendered.content.html } : {}),
    ...(run.attachments ? { attachments: run.attachments } : {}),
    dedupeKey: row.pk,
    ...(run.job.valid.expiresAtMs !== undefined ? { expiresAtMs: run.job.valid.expiresAtMs } : {}),
    tags: { purpose: intent.purpose, tenant: intent.tenant },
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
