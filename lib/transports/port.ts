import type { Channel } from '../domain/purposes.js';

/** One message ready to leave. The address and bodies exist only in memory for the duration of the call. */
export interface OutboundMessage {
  channel: Channel;
  /** Raw destination (email address or E.164 number). Never logged, never persisted. */
  to: string;
  subject?: string;
  text: string;
  html?: string;
  attachments?: ReadonlyArray<{ filename: string; contentType: string; content: Uint8Array }>;
  /**
   * Readable dedupe key (the ledger row's key): decorators attribute by it, and providers get it only as
   * the row label (base64url, lib/domain/keys.ts rowLabelOf) next to the hash, so evidence names its row.
   */
  dedupeKey: string;
  /** Epoch ms; SMS adapters derive a time-to-live from it. */
  expiresAtMs?: number;
  /** Non-secret labels for provider-side filtering (purpose, tenant). */
  tags?: Readonly<Record<string, string>>;
}

/**
 * The four honest answers a provider call can give.
 * - accepted: the provider took the message and told us its id.
 * - rejected: permanent; the same request will never succeed (invalid destination, content refused).
 * - retryable: the provider certainly did not process it (429, connect refused before sending).
 * - ambiguous: the request may have been processed and we did not see the answer (timeout after send).
 */
export type SendResult =
  | { kind: 'accepted'; providerMessageId: string; replayed?: boolean }
  | { kind: 'rejected'; reason: string; code?: string }
  | { kind: 'retryable'; reason: string; retryAfterMs?: number }
  | { kind: 'ambiguous'; reason: string };

/** What a provider can tell us later about a send whose answer we lost. */
export type LookupResult =
  | { kind: 'accepted'; providerMessageId: string }
  | { kind: 'rejected'; reason: string }
  | { kind: 'not_found' }
  | { kind: 'unavailable'; reason: string };

export interface TransportCapabilities {
  /** The provider enforces an idempotency key (a replay returns the original message). */
  idempotencyKey: boolean;
  /** How long the provider remembers a key, in seconds (0 when it has no keys). */
  keyRetentionSeconds: number;
  lookupByKey: boolean;
  lookupByProviderId: boolean;
  cancel: boolean;
  /** The provider pushes delivery events that the evidence recorder can consume. */
  pushEvidence: boolean;
}

export interface Transport {
  /** Stable name recorded on the ledger row: `ses`, `sms-v2`, `resend`, `twilio`, `rest`. */
  readonly name: string;
  readonly channel: Channel;
  readonly capabilities: TransportCapabilities;
  /** Sends once. `idempotencyKey` is the same on every retry of the same claim. Never throws for provider answers. */
  send(message: OutboundMessage, idempotencyKey: string): Promise<SendResult>;
  lookup?(idempotencyKey: string, providerMessageId?: string): Promise<LookupResult>;
}
