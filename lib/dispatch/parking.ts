import type { ValidIntent } from '../domain/intent.js';
import { deriveDedupeKey, deriveLogicalKey, identityOf } from '../domain/keys.js';
import { retentionTtl } from '../domain/purposes.js';
import type { DispatchContext, Job } from './run.js';

/**
 * Hands the intent to the ledger: sealed with the AWS Encryption SDK (the logical key is the encryption
 * context), in the attention index's `parked` partition, due when the sweep must look again. Once per
 * handling; later parks only move the due time. TTL: the intent's expiry or the purpose's retention.
 */
export const park = async (ctx: DispatchContext, job: Job, reason: string, dueAt: number): Promise<void> => {
  if (job.sealed) {
    await ctx.ledger.rearm(job.logicalKey, dueAt, reason);
    return;
  }
  const now = ctx.clock.now();
  const { intent, policy } = job.valid;
  const retention = retentionTtl(policy, now);
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

/** A resume message names a sealed intent; without one there is nothing to send (the sweep says why). */
export const unseal = async (ctx: DispatchContext, logicalKey: string): Promise<string | undefined> => {
  const seal = await ctx.ledger.getSeal(logicalKey);
  if (!seal) {
    ctx.logger.warn('resume for a notification with nothing sealed; left to the sweep', { logicalKey });
    return undefined;
  }
  return ctx.sealer.open(seal.ciphertext, logicalKey);
};

/** The logical notification (every channel of one intent): the fallback flow's and the seal's key. */
export const logicalKeyOf = (valid: ValidIntent): string => {
  const { intent, policy } = valid;
  const { channel: _c, ...logical } = identityOf(intent, policy, intent.channels[0]!);
  return deriveLogicalKey(logical);
};
