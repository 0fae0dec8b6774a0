import type { ValidIntent } from '../domain/intent.js';
import { deriveDedupeKey, deriveLogicalKey, identityOf } from '../domain/keys.js';
import type { Channel } from '../domain/purposes.js';
import type { DeliveryRecord } from '../ledger/port.js';
import type { TemplateOwner } from '../templates/port.js';

export interface ClaimInput {
  valid: ValidIntent;
  channel: Channel;
  contentHash: string;
  templateOwner: TemplateOwner;
  workerId: string;
  now: number;
  leaseMs: number;
  /**
   * Epoch ms: claim the row `scheduled` (no lease; `nextAttemptAt` is the due time). The sealed intent
   * and the ledger's sweep own it until then.
   */
  scheduledFor?: number;
}

/**
 * Builds the row a claim writes. This is the allow-list of what the ledger may hold about a message:
 * identities, hashes, policy and template versions, times. The intent's addresses, data and secrets are
 * not copied — there is no field for them.
 */
export const buildClaimRecord = ({
  valid,
  channel,
  contentHash,
  templateOwner,
  workerId,
  now,
  leaseMs,
  scheduledFor,
}: ClaimInput): DeliveryRecord => {
  const { intent, policy } = valid;
  const identity = identityOf(intent, policy, channel);
  const key = deriveDedupeKey(identity);
  const { channel: _channel, ...logical } = identity;
  const scheduled = scheduledFor !== undefined;
  return {
    pk: key.readable,
    kind: 'delivery',
    idempotencyKey: key.hash,
    state: scheduled ? 'scheduled' : 'claimed',
    version: 1,
    tenant: intent.tenant,
    purpose: intent.purpose,
    eventId: intent.eventId,
    recipientRef: intent.recipient.ref,
    channel,
    logicalKey: deriveLogicalKey(logical),
    contentHash,
    policyVersion: policy.policyVersion,
    templateId: intent.template.id,
    templateRevision: intent.template.revision,
    templateOwner,
    attempts: 0,
    createdAt: now,
    updatedAt: now,
    ...(valid.expiresAtMs !== undefined ? { expiresAt: valid.expiresAtMs } : {}),
    ...(scheduled ? { nextAttemptAt: scheduledFor } : { leaseOwner: workerId, leaseUntil: now + leaseMs }),
    ...(intent.resendOf ? { resendOf: intent.resendOf.dedupeKey } : {}),
    history: [
      scheduled
        ? {
            s: 'scheduled',
            at: now,
            by: workerId,
            why: `scheduled_for:${new Date(scheduledFor).toISOString()}`,
          }
        : { s: 'claimed', at: now, by: workerId, why: 'intent_received' },
    ],
  };
};
