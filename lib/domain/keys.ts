import { createHash } from 'node:crypto';
import type { Intent } from './intent.js';
import type { Channel, PurposePolicy } from './purposes.js';

/**
 * The business identity of one logical message on one channel. Deliberately absent: the queue message
 * id, any timestamp, any random value, any retry counter. Those change between deliveries of the same
 * intent, and a key that changes is a key that lets a duplicate through.
 */
export interface MessageIdentity {
  tenant: string;
  purpose: string;
  eventId: string;
  recipientRef: string;
  channel: Channel;
  /** Present only when the purpose puts the template revision in the key (receipts). */
  templateRevision?: string;
  /** Present only on an operator-approved resend: the decision that authorised it. */
  resendDecisionId?: string;
}

export interface DedupeKey {
  /** Human-readable form, the ledger's partition key: `tenant:purpose:event:recipient:channel[:rev=…][:resend=…]`. */
  readable: string;
  /** Fixed-length form (64 hex) for provider idempotency headers, tags and contexts. */
  hash: string;
}

const logicalParts = (id: Omit<MessageIdentity, 'channel'>): string[] => {
  const parts = [id.tenant, id.purpose, id.eventId, id.recipientRef];
  if (id.templateRevision !== undefined) parts.push(`rev=${id.templateRevision}`);
  if (id.resendDecisionId !== undefined) parts.push(`resend=${id.resendDecisionId}`);
  return parts;
};

export const hashKey = (readable: string): string =>
  createHash('sha256').update(readable, 'utf8').digest('hex');

export const deriveDedupeKey = (id: MessageIdentity): DedupeKey => {
  const parts = logicalParts(id);
  // The channel sits after the recipient so that a key reads like a sentence: who, then how.
  parts.splice(4, 0, id.channel);
  const readable = parts.join(':');
  return { readable, hash: hashKey(readable) };
};

/** The logical notification across channels; a fallback workflow authorises one channel of it at a time. */
export const deriveLogicalKey = (id: Omit<MessageIdentity, 'channel'>): string => logicalParts(id).join(':');

export const identityOf = (intent: Intent, policy: PurposePolicy, channel: Channel): MessageIdentity => ({
  tenant: intent.tenant,
  purpose: intent.purpose,
  eventId: intent.eventId,
  recipientRef: intent.recipient.ref,
  channel,
  ...(policy.templateRevisionInKey ? { templateRevision: intent.template.revision } : {}),
  ...(intent.resendOf ? { resendDecisionId: intent.resendOf.decisionId } : {}),
});

/** Parses a readable key back into its identity (used to check an operator's resend against the old row). */
export const parseDedupeKey = (readable: string): MessageIdentity | undefined => {
  const parts = readable.split(':');
  if (parts.length < 5) return undefined;
  const [tenant, purpose, eventId, recipientRef, channel, ...rest] = parts as [
    string,
    string,
    string,
    string,
    string,
    ...string[],
  ];
  if (channel !== 'email' && channel !== 'sms') return undefined;
  const id: MessageIdentity = { tenant, purpose, eventId, recipientRef, channel };
  for (const part of rest) {
    if (part.startsWith('rev=')) id.templateRevision = part.slice(4);
    else if (part.startsWith('resend=')) id.resendDecisionId = part.slice(7);
    else return undefined;
  }
  return id;
};

/**
 * The longest row key (UTF-8 bytes) a provider label carries (lib/transports/labels.ts, form 1): the label
 * is 1 + 16 + key bytes, base64url, within the tightest provider limit of 256 characters. A longer key is
 * labelled by its hash, and its claim writes the `ev#<hash>` pointer (lib/ledger/evidencePointer.ts).
 */
export const LABEL_KEY_MAX_BYTES = 175;

/** Whether the label of this row key carries the key itself (so its evidence needs no pointer item). */
export const labelCarriesKey = (readable: string): boolean => {
  const length = Buffer.byteLength(readable, 'utf8');
  return length > 0 && length <= LABEL_KEY_MAX_BYTES;
};
