import type { AttachmentStore } from '../attachments/AttachmentStore.js';
import type { Clock } from '../domain/clock.js';
import type { Channel, PurposeRegistry } from '../domain/purposes.js';
import type { DeliveryState } from '../domain/states.js';
import type { RecordedEvidence } from '../evidence/EvidenceRecorder.js';
import type { GateFactsReader, Ledger, SuppressionList } from '../ledger/port.js';
import type { Logger, MetricsSink } from '../observability.js';
import type { Admission } from '../rate/Admission.js';
import type { TransportHolds } from '../rate/TransportHolds.js';
import type { IntentSealer } from '../seal/IntentSealer.js';
import type { TemplateRenderer } from '../templates/port.js';
import type { ProviderCircuits } from '../transports/health.js';
import type { Transport } from '../transports/port.js';

/**
 * The named edges of one dispatch: each phase ends at one of them, and the driver (lib/dispatch/driver.ts)
 * calls the probe there (crash tests stop the worker at each; in production the probe is absent).
 *
 *   [seal]─► after_seal
 *   before_claim ─► claim ─► after_claim ─► gates ─► after_dispatching ─► send ─► after_provider
 *        ─► record ─► after_outcome ─► (wait ─► after_wait ─► gates …)
 *   a gate that refuses writes its final state and stops at after_gate.
 */
export type DispatchEdge =
  | 'after_seal'
  | 'before_claim'
  | 'after_claim'
  | 'after_gate'
  | 'after_dispatching'
  | 'after_provider'
  | 'after_outcome'
  | 'after_wait';
export type EdgeProbe = (
  edge: DispatchEdge,
  context: { dedupeKey: string; channel: Channel; state?: DeliveryState },
) => void | Promise<void>;

/** The observability ports live once, in lib/observability.ts. */
export type DispatchLogger = Logger;
export type { MetricsSink };

export interface DispatcherDeps {
  ledger: Ledger;
  suppressions: SuppressionList;
  renderer: TemplateRenderer;
  transports: Readonly<Record<Channel, Transport>>;
  /**
   * Each channel's providers in failover order (the first is `transports[channel]`); absent: that one
   * alone. A row moves along it only on a definite non-acceptance (lib/dispatch/providers.ts).
   */
  providers?: Readonly<Record<Channel, readonly Transport[]>>;
  /** The providers' shared circuits (lib/transports/health.ts); absent: every circuit closed. */
  circuits?: ProviderCircuits;
  attachments: AttachmentStore;
  purposes: PurposeRegistry;
  clock: Clock;
  /** HMAC key for content hashes (from Secrets Manager in AWS). */
  contentHashKey: string;
  /** Seals intent bodies when work leaves the happy path (AWS Encryption SDK). */
  sealer: IntentSealer;
  /** Reads a whole queue batch's suppression entries and fallback flows at once (see `prefetch`). */
  gateFacts?: GateFactsReader;
  /** Settles a row that just became `unknown` from provider events recorded earlier (lib/evidence). */
  evidence?: RecordedEvidence;
  workerId: string;
  leaseMs: number;
  /**
   * The queue's maxReceiveCount: on the last receive the intent is sealed before anything else, so the
   * ledger's sweep owns it if this delivery dies. Absent: never treated as the last receive.
   */
  maxReceiveCount?: number;
  /**
   * How long after a parked message's own due time the ledger's sweep looks (the queue message normally
   * comes back first). Default: 2 × the lease.
   */
  parkGraceMs?: number;
  /** Longest wait spent retrying inside one invocation; a longer Retry-After goes back to the queue. */
  inlineRetryBudgetMs?: number;
  backoff?: { baseMs: number; capMs: number };
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  logger: DispatchLogger;
  metrics?: MetricsSink;
  /** Rate control and SMS anti-abuse before every provider call (lib/rate/Admission.ts). */
  admission?: Admission;
  /** The transport-wide holds (issue 25, lib/rate/TransportHolds.ts). Absent: a hold answer is one row's wait. */
  holds?: TransportHolds;
  probe?: EdgeProbe;
}

/** What this worker did with one channel. The names are the documentation of the outcomes. */
export type ChannelAction =
  | 'sent'
  | 'rejected_by_provider'
  | 'retry_budget_exhausted'
  /** The row is `unknown`; the reconciler and evidence settle it (a keyed replay may come back). */
  | 'marked_unknown'
  /** The message must come back (a live lease elsewhere, a retry not yet due, a keyed replay). */
  | 'retry_later'
  | 'left_for_reconciler'
  | 'already_final'
  | 'content_mismatch_blocked'
  | 'expired'
  | 'suppressed'
  | 'blocked'
  | 'render_failed'
  /** The row moved under this worker while the provider answered; the answer was applied to it. */
  | 'late_answer_applied'
  /** The fallback's active channel is not settled; the ledger's seal owns the wait. */
  | 'waiting_for_active_channel'
  /** The row became unknown and provider events recorded earlier settled it at once. */
  | 'settled_by_recorded_evidence'
  /** Claimed as `scheduled`: sealed, and the ledger's sweep dispatches it at sendAt. */
  | 'scheduled'
  /** The provider accepted it and holds it until sendAt (`provider_scheduled`). */
  | 'handed_to_provider_schedule'
  /** A committed cancel marker stopped it before any provider call. */
  | 'cancelled';

/** Where one channel of an intent ended up after this delivery of the message. */
export interface ChannelOutcome {
  channel: Channel;
  dedupeKey: string;
  state: DeliveryState;
  action: ChannelAction;
  providerMessageId?: string;
  /** With `retry_later`: when the message is worth receiving again (epoch ms). */
  dueAt?: number;
}

/**
 * - `done`: nothing more will happen for this queue message; acknowledge it.
 * - `retry_later`: the message must come back; `visibleAfterMs` says when (the SQS handler moves its
 *   visibility there, so a long Retry-After does not burn receives).
 */
export interface IntentOutcome {
  disposition: 'done' | 'retry_later';
  visibleAfterMs?: number;
  channels: ChannelOutcome[];
  invalid?: { issues: Array<{ field: string; message: string }> };
}

export interface QueueEnvelope {
  messageId: string;
  receiveCount?: number;
  /** The batch already sealed this message's intent (`Dispatcher.sealLastReceives`): do not seal again. */
  sealed?: boolean;
  /** When the queue received the message (SQS `SentTimestamp`, epoch ms): the SLO clock's fallback. */
  sentAt?: number;
}
