import type { ValidIntent } from '../domain/intent.js';
import { deriveDedupeKey, deriveLogicalKey, identityOf } from '../domain/keys.js';
import type { Channel } from '../domain/purposes.js';
import type { DeliveryRecord } from '../ledger/port.js';
import type { TemplateOwner } from '../templates/port.js';

/** The state a claim is written in when it is not `claimed`. */
export type ClaimInitial =
  | { state: 'dispatching'; why: string; transport: string }
  | { state: 'scheduled'; why: string; dueAt: number }
  | { state: 'expired' | 'suppressed' | 'blocked'; why: string; ttl: number };

export interface ClaimInput {
  valid: ValidIntent;
  channel: Channel;
  contentHash: string;
  templateOwner: TemplateOwner;
  workerId: string;
  now: number;
  leaseMs: number;
  /**
   * When the queue received the message that carried the intent (SQS `SentTimestamp`, epoch ms): the
   * publish time of an intent that does not state its own `publishedAt`.
   */
  queueSentAt?: number;
  /**
   * The state the row is created in (default `claimed`): `dispatching` when the read-only gates passed
   * (leased, attempt 1, the transport named), `scheduled` for a send the ledger holds until its due time
   * (no lease; `nextAttemptAt` is the due time, and the sealed intent and the sweep own it until then),
   * or the final state a gate chose (no lease, with its TTL).
   */
  initial?: ClaimInitial;
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
  initial,
  queueSentAt,
}: ClaimInput): DeliveryRecord => {
  const { intent, policy } = valid;
  const identity = identityOf(intent, policy, channel);
  const key = deriveDedupeKey(identity);
  const { channel: _channel, ...logical } = identity;
  const state = initial?.state ?? 'claimed';
  const leased = state === 'claimed' || state === 'dispatching';
  return {
    pk: key.readable,
    kind: 'delivery',
    idempotencyKey: key.hash,
    state,
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
    attempts: state === 'dispatching' ? 1 : 0,
    ...(initial?.state === 'dispatching' ? { transport: initial.transport } : {}),
    ...(initial && 'ttl' in initial ? { ttl: initial.ttl } : {}),
    createdAt: now,
    updatedAt: now,
    ...(valid.expiresAtMs !== undefined ? { expiresAt: valid.expiresAtMs } : {}),
    reqAt: requestedAt(valid, queueSentAt, now),
    ...(leased ? { leaseOwner: workerId, leaseUntil: now + leaseMs } : {}),
    ...(initial?.state === 'scheduled' ? { nextAttemptAt: initial.dueAt } : {}),
    ...(intent.resendOf ? { resendOf: intent.resendOf.dedupeKey } : {}),
    history: [
      {
        s: state,
        at: now,
        by: workerId,
        why: initial?.why ?? 'intent_received',
        ...(initial?.state === 'dispatching' ? { n: 1, p: initial.transport } : {}),
      },
    ],
  };
};

/**
 * Where the service level objectives start measuring a message (lib/slo): the publish time the intent
 * states, else the queue's SentTimestamp, else the claim itself; never after the claim (a publisher's
 * clock may run ahead); and a scheduled send's `sendAt` when that is later.
 */
export const requestedAt = (valid: ValidIntent, queueSentAt: number | undefined, now: number): number =>
  Math.max(Math.min(valid.publishedAtMs ?? queueSentAt ?? now, now), valid.sendAtMs ?? 0);
