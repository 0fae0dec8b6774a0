import { sha256Hex } from '../attachments/AttachmentStore.js';
import { NUMBER_TENANT, numberRefOf } from '../ledger/optOut.js';
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

/**
 * The batch's suppression facts when they cover this recipient; otherwise one strongly consistent read.
 * On SMS the number's own entry counts too (an inbound STOP suppresses the number: lib/ledger/optOut.ts).
 */
export const suppressionOf = async (run: ChannelRun): Promise<{ suppressed: boolean; reason?: string }> => {
  const { intent } = run.job.valid;
  const fromBatch = run.job.facts?.suppression(intent.tenant, intent.recipient.ref, run.channel);
  const recipient =
    fromBatch ?? (await run.ctx.suppressions.isSuppressed(intent.tenant, intent.recipient.ref, run.channel));
  if (recipient.suppressed) return recipient;
  const number = numberRefFor(run);
  if (!number) return recipient;
  return (
    run.job.facts?.suppression(NUMBER_TENANT, number, run.channel) ??
    (await run.ctx.suppressions.isSuppressed(NUMBER_TENANT, number, run.channel))
  );
};

/** The same, read now (never from the batch): before every retry or resume. */
export const freshSuppressionOf = async (
  run: ChannelRun,
): Promise<{ suppressed: boolean; reason?: string }> => {
  const { intent } = run.job.valid;
  const recipient = await run.ctx.suppressions.isSuppressed(intent.tenant, intent.recipient.ref, run.channel);
  const number = numberRefFor(run);
  if (recipient.suppressed || !number) return recipient;
  return run.ctx.suppressions.isSuppressed(NUMBER_TENANT, number, run.channel);
};

/** The suppression ref of the number an SMS goes to (keyed hash, lib/ledger/optOut.ts). */
const numberRefFor = (run: ChannelRun): string | undefined => {
  const phone = run.channel === 'sms' ? run.job.valid.intent.recipient.phone : undefined;
  return phone ? numberRefOf(phone, run.ctx.contentHashKey) : undefined;
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
  const { admission, holds } = run.ctx;
  // A held transport (issue 25): the row waits for the hold without calling the provider, or probes it.
  const hold = await holds?.check(run.transport.name, run.ctx.clock.now());
  if (hold?.kind === 'wait') return { kind: 'wait', until: hold.until, why: `transport_hold:${hold.reason}` };
  if (hold?.kind === 'probe') run.holdProbe = true;
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
