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
   * Readable dedupe key (the ledger row's key): decorators attribute by it. Never sent to a provider.
   */
  dedupeKey: string;
  /**
   * The opaque, authenticated label of the row (lib/transports/labels.ts sealLabel): the only
   * identifier a provider sees, in its tags, context, custom arguments or callback URL.
   */
  label: string;
  /** Epoch ms; SMS adapters derive a time-to-live from it. */
  expiresAtMs?: number;
  /**
   * Epoch ms: the provider holds the message until then (Resend `scheduled_at`, Twilio `SendAt`). Set only
   * when the adapter declares `schedule` and the time lies inside its window.
   */
  sendAtMs?: number;
}

/** What a provider said to a cancel of a message it holds for later. */
export type CancelResult =
  | { kind: 'cancelled'; detail?: string }
  /** The provider no longer holds it (sent, or past its cancel window): nothing can stop it now. */
  | { kind: 'too_late'; reason: string }
  /** No answer we can trust (network, 5xx, auth): ask again; the message may still go out. */
  | { kind: 'unavailable'; reason: string };

/**
 * Who caused a refusal. Only a `provider`-caused one may move the message to another provider (a failover
 * cannot duplicate a message the first provider refused, but a bad address or refused content fails the
 * same way everywhere, and an opted-out recipient must not be reached through a second provider):
 * - recipient: the destination itself (an invalid address or number, not a mobile number);
 * - content: the message as written (too large, refused content or attachment, a security refusal);
 * - provider: this provider, or our configuration at it (credentials, an unverified sender, a missing
 *   configuration set, a request it cannot process); another provider may take the same message;
 * - account: the provider refuses our account as a whole (suspended, disabled, sandboxed, a protect
 *   configuration or country block of ours): a standing decision an operator must look at;
 * - opted_out: the recipient opted out at the provider (SMS STOP): honoured, never routed around.
 */
export const REJECTION_CAUSES = ['recipient', 'content', 'provider', 'account', 'opted_out'] as const;
export type RejectionCause = (typeof REJECTION_CAUSES)[number];

/**
 * Account-level states that hold every message of the transport, not one row: the whole transport waits
 * (the rows stay in the ledger), nothing is rejected and no fallback is taken.
 * - daily_quota: SES "Daily message quota exceeded", Resend `daily_quota_exceeded`;
 * - monthly_quota: Resend `monthly_quota_exceeded`;
 * - sending_paused: SES `SendingPausedException` (account or configuration set paused);
 * - spend_limit: End User Messaging SMS `ServiceQuotaExceededException` with a monthly spend limit reason;
 * - temporary_block: SendGrid 403 "temporarily blocked from sending emails due to repeated bad requests".
 */
export const HOLD_REASONS = [
  'daily_quota',
  'monthly_quota',
  'sending_paused',
  'spend_limit',
  'temporary_block',
] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

export interface TransportHold {
  reason: HoldReason;
  /** Epoch ms when the state is known to end; absent when the provider does not say. */
  until?: number;
}

/**
 * The four honest answers a provider call can give.
 * - accepted: the provider took the message and told us its id.
 * - rejected: permanent; the same request will never succeed (invalid destination, content refused), with
 *   who caused it (`cause`).
 * - retryable: the provider certainly did not process it (429, connect refused before sending). With
 *   `hold`, the answer is about the whole transport (a quota, a paused account): the row waits and its
 *   retry budget is not spent; the dispatcher may hold the transport (lib/dispatch).
 * - ambiguous: the request may have been processed and we did not see the answer (timeout after send).
 */
export type SendResult =
  | { kind: 'accepted'; providerMessageId: string; replayed?: boolean }
  | { kind: 'rejected'; reason: string; code?: string; cause: RejectionCause }
  | { kind: 'retryable'; reason: string; retryAfterMs?: number; hold?: TransportHold }
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
  /** The provider cancels a message it holds for later (see `schedule`); nothing cancels a sent one. */
  cancel: boolean;
  /**
   * Provider-side scheduling: the send-time window the provider accepts, in seconds from the request
   * (Resend: up to 30 days; Twilio: 300 s to 35 days, with a Messaging Service). Absent: none.
   */
  schedule?: { minLeadSeconds: number; maxLeadSeconds: number };
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
  /** Cancels a message the provider holds for later (declared by `capabilities.cancel`). */
  cancelScheduled?(providerMessageId: string): Promise<CancelResult>;
}

/**
 * Whether this adapter can hold a message until `sendAtMs`, asked at `now`. A cancellable purpose is
 * handed only to a provider that can also cancel it (seed 004's REST provider schedules but cannot
 * cancel: its scheduled receipts stay in the ledger, where a cancel still holds).
 */
export const providerCanHold = (
  transport: Transport,
  sendAtMs: number,
  now: number,
  needsCancel: boolean,
): boolean => {
  const window = transport.capabilities.schedule;
  if (!window) return false;
  if (needsCancel && (!transport.capabilities.cancel || !transport.cancelScheduled)) return false;
  const lead = (sendAtMs - now) / 1000;
  return lead >= window.minLeadSeconds && lead <= window.maxLeadSeconds;
};

/**
 * The configured adapter that holds a row's attempt: the one whose name the row recorded, among the
 * channel's providers in failover order (lib/dispatch/providers.ts) or its one transport. After a
 * failover that is not the first; undefined when none of that name is configured any more.
 */
export const holderNamed = (
  deps: {
    transports: Readonly<Record<Channel, Transport>>;
    providers?: Readonly<Record<Channel, readonly Transport[]>> | undefined;
  },
  row: { channel: Channel; transport?: string | undefined },
): Transport | undefined => {
  const chain = deps.providers?.[row.channel] ?? [deps.transports[row.channel]];
  return chain.find((t) => t?.name === row.transport);
};
