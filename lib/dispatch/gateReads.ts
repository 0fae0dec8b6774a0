import { sha256Hex } from '../attachments/AttachmentStore.js';
import type { AdmissionVerdict } from '../rate/Admission.js';
import type { ChannelRun } from './run.js';

/**
 * The checks both the read-only gates before a claim (phases/prepare.ts) and the gates before a retry or
 * a resume (phases/gates.ts) make. Each reads; none writes the row.
 */

export const expired = (run: ChannelRun): boolean => {
  const expiresAt = run.job.valid.expiresAtMs;
  return expiresAt !== undefined && run.ctx.clock.now() >= expiresAt;
};

/** The batch's suppression facts when they cover this recipient; otherwise one strongly consistent read. */
export const suppressionOf = async (run: ChannelRun): Promise<{ suppressed: boolean; reason?: string }> => {
  const { intent } = run.job.valid;
  const fromBatch = run.job.facts?.suppression(intent.tenant, intent.recipient.ref, run.channel);
  if (fromBatch) return fromBatch;
  return run.ctx.suppressions.isSuppressed(intent.tenant, intent.recipient.ref, run.channel);
};

/**
 * Fetches each attachment by immutable reference and verifies its sha256; returns the refusal reason
 * (by position, not file name: a report's file name can carry a patient's name) or nothing.
 */
export const fetchAttachments = async (run: ChannelRun): Promise<string | undefined> => {
  const { intent } = run.job.valid;
  if (run.channel !== 'email' || !intent.attachments?.length || run.attachments) return undefined;
  const fetched = [];
  for (const [index, ref] of intent.attachments.entries()) {
    const bytes = await run.ctx.attachments.fetch(ref.uri);
    if (sha256Hex(bytes) !== ref.sha256) return `attachment_checksum_mismatch:${index + 1}`;
    fetched.push({ filename: ref.filename, contentType: ref.contentType, content: bytes });
  }
  run.attachments = fetched;
  return undefined;
};

/**
 * Rate control and SMS anti-abuse before the claim (lib/rate/Admission.ts): country rules and the pace.
 * The spend breaker counts later, after the `dispatching` write (phases/send.ts). Without it every
 * channel may go.
 */
export const admit = async (run: ChannelRun): Promise<AdmissionVerdict> => {
  const { admission } = run.ctx;
  if (!admission) return { kind: 'go' };
  const { intent, policy } = run.job.valid;
  const phone = run.channel === 'sms' ? intent.recipient.phone : undefined;
  const verdict = await admission.beforeClaim({
    channel: run.channel,
    policy,
    tenant: intent.tenant,
    transport: run.transport.name,
    ...(phone ? { phone } : {}),
  });
  if (verdict.kind === 'go') {
    run.admitted = true;
    if (verdict.ticket) run.ticket = verdict.ticket;
  }
  return verdict;
};
