import { SendproofError } from '../domain/errors.js';
import type { ValidIntent } from '../domain/intent.js';
import { deriveDedupeKey, deriveLogicalKey, identityOf } from '../domain/keys.js';
import { retentionTtl } from '../domain/purposes.js';
import { METRIC } from '../observability.js';
import { type DispatchContext, followsFlow, isScheduledAhead, type Job } from './run.js';
import type { QueueEnvelope } from './types.js';

/**
 * Hands the intent to the ledger: sealed with the AWS Encryption SDK (the logical key is the encryption
 * context), in the attention index's `parked` partition, due when the sweep must look again. Once per
 * handling; later parks only move the due time. TTL: the intent's expiry or the purpose's retention
 * (counted from sendAt for a scheduled one), whichever is first.
 */
export const park = async (ctx: DispatchContext, job: Job, reason: string, dueAt: number): Promise<void> => {
  if (job.sealed) {
    await ctx.ledger.rearm(job.logicalKey, dueAt, reason);
    return;
  }
  const now = ctx.clock.now();
  const { intent, policy } = job.valid;
  // A scheduled notification's seal is kept for the retention counted from its sendAt: due then, it must
  // still exist (the row it resumes has no TTL and no index entry of its own).
  const retention = retentionTtl(policy, Math.max(now, job.valid.sendAtMs ?? now));
  const ttl =
    job.valid.expiresAtMs !== undefined
      ? Math.min(retention, Math.ceil(job.valid.expiresAtMs / 1000))
      : retention;
  await ctx.ledger.park({
    logicalKey: job.logicalKey,
    rows: intent.channels.map((channel) => ({
      channel,
      dedupeKey: deriveDedupeKey(identityOf(intent, policy, channel)).readable,
    })),
    fallback: job.valid.delivery === 'fallback',
    purpose: intent.purpose,
    tenant: intent.tenant,
    ciphertext: await ctx.sealer.seal(job.body, job.logicalKey),
    reason,
    dueAt,
    createdAt: now,
    ...(job.valid.sendAtMs !== undefined ? { notBefore: job.valid.sendAtMs } : {}),
    ttl,
  });
  job.sealed = true;
};

/**
 * A resume message names a sealed intent; without one there is nothing to send (the sweep says why). A
 * seal that does not open (its key is gone, the ciphertext damaged, KMS refusing) is not this message's
 * to retry: the notice is acknowledged, the reason is recorded on the seal, and the sweep resumes it
 * again next period — at its resume limit it stalls the rows with that reason.
 */
export const unseal = async (ctx: DispatchContext, logicalKey: string): Promise<string | undefined> => {
  const seal = await ctx.ledger.getSeal(logicalKey);
  if (!seal) {
    ctx.logger.warn('resume for a notification with nothing sealed; left to the sweep', { logicalKey });
    return undefined;
  }
  try {
    return await ctx.sealer.open(seal.ciphertext, logicalKey);
  } catch (error) {
    // The sealer's refusals are permanent SendproofErrors (SealError); not imported here, so the
    // Encryption SDK stays unloaded until a seal is used (lib/seal/lazySealer.ts).
    if (!(error instanceof SendproofError && error.kind === 'permanent')) throw error;
    ctx.logger.warn('sealed intent does not open; left to the sweep', { logicalKey, code: error.code });
    await ctx.ledger.rearm(logicalKey, seal.dueAt, error.code);
    return undefined;
  }
};

/** The logical notification (every channel of one intent): the fallback flow's and the seal's key. */
export const logicalKeyOf = (valid: ValidIntent): string => {
  const { intent, policy } = valid;
  const { channel: _c, ...logical } = identityOf(intent, policy, intent.channels[0]!);
  return deriveLogicalKey(logical);
};

/** This delivery is the message's last: the queue moves it to the DLQ if it does not finish. */
export const isLastReceive = (ctx: DispatchContext, envelope: QueueEnvelope): boolean =>
  ctx.maxReceiveCount !== undefined && (envelope.receiveCount ?? 1) >= ctx.maxReceiveCount;

export interface SealPlan {
  reason: 'scheduled' | 'fallback' | 'last_receive';
  dueAt: number;
}

/**
 * Whether the ledger takes the intent before any claim: a scheduled one (due at sendAt; its message is
 * acknowledged), a fallback (its next channel may be needed long after the message is gone, a bounce
 * hours later), or any intent on its last receive (there is no next receive).
 */
export const sealPlanOf = (
  ctx: DispatchContext,
  valid: ValidIntent,
  lastReceive: boolean,
): SealPlan | undefined => {
  const now = ctx.clock.now();
  if (isScheduledAhead(valid, now)) return { reason: 'scheduled', dueAt: valid.sendAtMs! };
  if (followsFlow(valid)) return { reason: 'fallback', dueAt: now + ctx.leaseMs };
  if (lastReceive) return { reason: 'last_receive', dueAt: now + ctx.leaseMs };
  return undefined;
};

/**
 * Seals the intent as planned. A last-receive seal that fails (KMS refusing, a throttled write) does not
 * stop the handling: the seal is the backstop for a handling that dies, and the handling itself may
 * still bring every row to an owned state (an expired `dispatching` row becomes an indexed `unknown`).
 * The failure is counted (`LastReceiveSealFailures`, alarmed). Any other seal is required: it throws.
 * With `tolerate`, no failure throws. Returns whether the intent is sealed.
 */
export const sealFirst = async (
  ctx: DispatchContext,
  job: Job,
  plan: SealPlan,
  options: { tolerate?: boolean } = {},
): Promise<boolean> => {
  try {
    await park(ctx, job, plan.reason, plan.dueAt);
    return true;
  } catch (error) {
    if (plan.reason !== 'last_receive' && !options.tolerate) throw error;
    ctx.logger.error('sealing the intent failed; the handling goes on without the seal', {
      logicalKey: job.logicalKey,
      reason: plan.reason,
      error: error instanceof Error ? error.name : 'unknown',
    });
    ctx.metrics?.count(METRIC.sealFailures);
    return false;
  }
};
