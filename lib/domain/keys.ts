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
 * The row label: the readable dedupe key (the ledger's partition key) as base64url, which every
 * provider's tags, contexts, custom arguments and callback URLs accept unchanged. Sent with the key hash,
 * so that provider evidence names its row and is matched by one GetItem without an index or a pointer
 * item. The readable key holds identifiers only (tenant, purpose, event, the recipient's opaque ref,
 * channel); intent validation refuses a ref that is an address, so the label carries no address or
 * secret. Base64url is an encoding for the providers' alphabet, not a protection.
 */
export const ROW_LABEL_MAX = 256;

/** The label for a row key, or undefined when it is longer than the tightest provider limit (256). */
export const rowLabelOf = (readable: string): string | undefined => {
  const label = Buffer.from(readable, 'utf8').toString('base64url');
  return label.length > 0 && label.length <= ROW_LABEL_MAX ? label : undefined;
};

/**
 * The row key a provider echoed, only if it decodes to the key whose hash the event also carries: a label
 * that does not match its hash is ignored (the event is then matched by the hash alone, as before).
 */
export const rowKeyOfLabel = (label: string | undefined, hash: string): string | undefined => {
  if (!label || label.length > ROW_LABEL_MAX || !/^[A-Za-z0-9_-]+$/.test(label)) return undefined;
  const readable = Buffer.from(label, 'base64url').toString('utf8');
  return hashKey(readable) === hash ? readable : undefined;
};
