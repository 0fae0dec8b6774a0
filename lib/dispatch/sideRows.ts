import { createHmac } from 'node:crypto';
import type { Clock } from '../domain/clock.js';
import type { SendproofError } from '../domain/errors.js';
import type { ValidIntent } from '../domain/intent.js';
import { type Channel, retentionTtl } from '../domain/purposes.js';
import type { DeliveryRecord, Ledger } from '../ledger/port.js';
import { buildClaimRecord } from './claimRecord.js';

/**
 * Rows that record a refusal next to (or instead of) a delivery row: a blocked content mismatch, an
 * unrenderable intent, a body that failed the boundary. None holds a lease: nothing is ever dispatched
 * from them.
 */
export interface SideRowDeps {
  ledger: Ledger;
  clock: Clock;
  workerId: string;
  contentHashKey: string;
  logger: { warn(message: string, ...extra: Array<Record<string, unknown>>): void };
}

const sideRow = (
  deps: SideRowDeps,
  valid: ValidIntent,
  channel: Channel,
  hash: string,
  owner: DeliveryRecord['templateOwner'],
  now: number,
) => {
  const {
    leaseOwner: _o,
    leaseUntil: _u,
    ...rest
  } = buildClaimRecord({
    valid,
    channel,
    contentHash: hash,
    templateOwner: owner,
    workerId: deps.workerId,
    now,
    leaseMs: 0,
  });
  return rest;
};

/** Same identity, different content: the mismatch is recorded as its own row and nothing is sent. */
export const recordMismatch = async (
  deps: SideRowDeps,
  existing: DeliveryRecord,
  hash: string,
  valid: ValidIntent,
  channel: Channel,
): Promise<void> => {
  const now = deps.clock.now();
  await deps.ledger.claim({
    ...sideRow(deps, valid, channel, hash, existing.templateOwner, now),
    pk: `${existing.pk}#blocked#${hash.slice(3, 19)}`,
    kind: 'blocked',
    state: 'blocked',
    blockedAgainst: existing.pk,
    ttl: retentionTtl(valid.policy, now),
    history: [{ s: 'blocked', at: now, by: deps.workerId, why: 'content_mismatch' }],
  });
  deps.logger.warn('content mismatch blocked', {
    dedupeKey: existing.pk,
    channel,
    storedHash: existing.contentHash,
    offeredHash: hash,
  });
};

/**
 * The identifier of a body that failed the boundary: a keyed HMAC, never a plain hash. A plain sha256
 * of a body holding a 6-digit code could be reversed by trying a million bodies.
 */
export const invalidBodyId = (body: string, key: string): string =>
  createHmac('sha256', key).update(body, 'utf8').digest('hex');

/** A message that failed the boundary: recorded where an operator sees it, never retried. */
export const recordInvalidBody = async (
  deps: SideRowDeps,
  body: string,
  envelope: { messageId: string },
  issues: Array<{ field: string; message: string }>,
): Promise<void> => {
  const now = deps.clock.now();
  const bodyId = invalidBodyId(body, deps.contentHashKey);
  const hints = safeHints(body);
  await deps.ledger.claim({
    pk: `invalid#${bodyId.slice(0, 32)}`,
    kind: 'invalid',
    idempotencyKey: bodyId,
    state: 'invalid',
    version: 1,
    tenant: hints.tenant ?? '-',
    purpose: hints.purpose ?? '-',
    eventId: hints.eventId ?? '-',
    recipientRef: '-',
    channel: 'email',
    logicalKey: '-',
    contentHash: '-',
    policyVersion: '-',
    templateId: '-',
    templateRevision: '-',
    templateOwner: 'application',
    attempts: 0,
    createdAt: now,
    updatedAt: now,
    issues,
    history: [{ s: 'invalid', at: now, by: deps.workerId, why: `schema:${envelope.messageId}` }],
  });
  deps.logger.warn('invalid intent recorded', { sqsMessageId: envelope.messageId, bodyId, issues });
};

export const recordInvalidChannel = async (
  deps: SideRowDeps,
  valid: ValidIntent,
  channel: Channel,
  dedupeKey: string,
  error: SendproofError,
): Promise<void> => {
  const now = deps.clock.now();
  await deps.ledger.claim({
    ...sideRow(deps, valid, channel, '-', 'application', now),
    pk: `invalid#${dedupeKey}`,
    kind: 'invalid',
    state: 'invalid',
    issues: [{ field: 'template', message: error.message.slice(0, 200) }],
    history: [{ s: 'invalid', at: now, by: deps.workerId, why: `render:${error.code}` }],
  });
  deps.logger.warn('intent could not be rendered', { dedupeKey, channel, code: error.code });
};

/** No `@` or `+`: a hint that could be an email address or a phone number is not kept. */
const HINT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Identifiers an operator can search by, taken from an invalid body only when they are well-formed and
 * cannot be an address. `dlq list` uses the same filter for dead messages.
 */
export const safeHints = (body: string): { tenant?: string; purpose?: string; eventId?: string } => {
  try {
    const value = JSON.parse(body) as Record<string, unknown>;
    const pick = (v: unknown) => (typeof v === 'string' && HINT.test(v) ? v : undefined);
    const hints: { tenant?: string; purpose?: string; eventId?: string } = {};
    const tenant = pick(value.tenant);
    const purpose = pick(value.purpose);
    const eventId = pick(value.eventId);
    if (tenant) hints.tenant = tenant;
    if (purpose) hints.purpose = purpose;
    if (eventId) hints.eventId = eventId;
    return hints;
  } catch {
    return {};
  }
};
