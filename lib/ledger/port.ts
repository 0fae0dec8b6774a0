import type { Channel } from '../domain/purposes.js';
import type { DeliveryState } from '../domain/states.js';
import type { DeliveryFacts } from '../evidence/facts.js';
import type { TemplateOwner } from '../templates/port.js';

/** One entry of a row's append-only history. Short field names keep a full happy path under 1 KB. */
export interface TransitionEntry {
  /** The state entered. */
  s: DeliveryState;
  /** Epoch ms. */
  at: number;
  /** Worker id (`dispatch:<instance>`), `reconciler:<run>`, `evidence:<source>` or `operator:<id>`. */
  by: string;
  /** Why, in a short machine-readable phrase (`provider_timeout_after_send`, `lease_takeover`). */
  why?: string;
  /** Transport request/message id, when the transition carries one. */
  msg?: string;
  /** Provider attempt number this transition belongs to. */
  n?: number;
  /**
   * The provider this transition names (set with `transport`): on a `dispatching` entry, the provider
   * the attempt went to; on a failover's `retry_wait`, the provider the row moves to.
   */
  p?: string;
}

/** The current state of one logical message on one channel, with its full history. No secrets, no addresses. */
export interface DeliveryRecord {
  /** Readable dedupe key; the partition key. */
  pk: string;
  /** Row kind: `delivery` (one logical message on one channel), `blocked` (a refused content mismatch), `invalid`. */
  kind: 'delivery' | 'blocked' | 'invalid';
  idempotencyKey: string;
  state: DeliveryState;
  version: number;
  tenant: string;
  purpose: string;
  eventId: string;
  recipientRef: string;
  channel: Channel;
  logicalKey: string;
  contentHash: string;
  policyVersion: string;
  templateId: string;
  templateRevision: string;
  templateOwner: TemplateOwner;
  /** Transport name (`ses`, `rest`, …) once one was chosen. */
  transport?: string;
  providerMessageId?: string;
  attempts: number;
  createdAt: number;
  updatedAt: number;
  expiresAt?: number;
  /**
   * When the caller asked for the message (epoch ms): the publish time (the intent's `publishedAt`, else
   * the queue's SentTimestamp, else the claim time), or its `sendAt` when later. The service level
   * objectives measure from here (lib/slo). One short number: the row stays small.
   */
  reqAt?: number;
  leaseOwner?: string;
  leaseUntil?: number;
  nextAttemptAt?: number;
  /** Sparse attention index: present only while the row needs the reconciler or a human. */
  attn?: string;
  attnAt?: number;
  /** DynamoDB TTL (epoch seconds), set when the row becomes terminal. */
  ttl?: number;
  resendOf?: string;
  supersededBy?: string;
  /** For `blocked` rows: the key whose content did not match. */
  blockedAgainst?: string;
  /** For `invalid` rows: the structured validation issues (field + message, never values). */
  issues?: Array<{ field: string; message: string }>;
  /**
   * Evidence events that moved the row (provider event ids), so a repeated event is recorded once.
   * Post-acceptance facts are not listed here: their ids are in `delivery.h` (holdsEvidence).
   */
  evidenceIds?: string[];
  /**
   * Set by the evidence recorder when it kept an event while the row had no outcome yet (claimed,
   * dispatching, retry_wait): the write that gives the row its outcome applies the kept events.
   */
  evk?: boolean;
  /**
   * Facts providers reported about the message (delivered, bounced, complained, carrier receipts), with
   * their own short history. Not a state: an accepted row stays `accepted` when it bounces.
   */
  delivery?: DeliveryFacts;
  history: TransitionEntry[];
}

export type ClaimResult =
  | { kind: 'claimed'; record: DeliveryRecord; consumedWriteUnits: number }
  | { kind: 'conflict'; existing: DeliveryRecord; consumedWriteUnits: number };

export interface TransitionRequest {
  pk: string;
  /** The state the caller believes the row is in; the write is conditioned on it and on `expectedVersion`. */
  from: DeliveryState;
  expectedVersion: number;
  to: DeliveryState;
  by: string;
  why?: string;
  /** Extra attributes set with the transition (provider id, transport, attempts, lease, next attempt). */
  set?: Partial<
    Pick<
      DeliveryRecord,
      | 'transport'
      | 'providerMessageId'
      | 'attempts'
      | 'leaseOwner'
      | 'leaseUntil'
      | 'nextAttemptAt'
      | 'supersededBy'
      | 'contentHash'
      | 'ttl'
      | 'delivery'
    >
  >;
  /** Extra condition: the current lease must have expired before this time (takeovers, stale dispatching). */
  leaseExpiredBefore?: number;
  /** Provider event id recorded with this transition (evidence), refused if already present. */
  evidenceId?: string;
  now: number;
}

export type TransitionResult =
  | { kind: 'ok'; record: DeliveryRecord; consumedWriteUnits: number }
  | { kind: 'stale'; current?: DeliveryRecord; consumedWriteUnits: number };

export interface AttentionPage {
  items: DeliveryRecord[];
  cursor?: string;
  consumedReadUnits: number;
}

/** The fallback workflow's pointer: which channel of a logical notification may be active. */
export interface FallbackFlow {
  pk: string;
  order: Channel[];
  activeIndex: number;
  version: number;
}

/**
 * A notification that left the happy path keeps its intent here, sealed (AWS Encryption SDK ciphertext),
 * so the ledger can resume it when its queue message is gone. One item per logical notification (every
 * channel of the intent), in the attention index's `parked` partition sorted by `dueAt`: the time the
 * sweep must look at it again. Never archived; deleted by the sweep once the notification is final, and
 * by DynamoDB TTL no later than the intent's expiry or the purpose's retention.
 */
export interface SealedIntent {
  /** `seal#<logicalKey>`. */
  pk: string;
  kind: 'seal';
  logicalKey: string;
  /** Dedupe keys of the intent's channel rows, in the intent's channel order. */
  rows: Array<{ channel: Channel; dedupeKey: string }>;
  fallback: boolean;
  purpose: string;
  tenant: string;
  ciphertext: string;
  /** Why it was sealed last (`retry_wait`, `replay`, `last_receive`, `fallback`, …). */
  reason: string;
  dueAt: number;
  /** How many times the sweep re-published it without the notification moving; bounded. */
  resumes: number;
  createdAt: number;
  /** A scheduled notification's sendAt (epoch ms): it is not overdue, nor stale, before then. */
  notBefore?: number;
  ttl: number;
}

/** What one cancel covers within a business event: a purpose, a channel, or both (absent: all). */
export interface CancelScope {
  purpose?: string;
  channel?: Channel;
}

/** One committed cancel of a business event, by an operator (or the application) with a reason. */
export interface CancelOrder extends CancelScope {
  /** `<purpose|*>/<channel|*>`: the same scope is committed once; a repeat reports the first. */
  id: string;
  /** `operator:<id>` or the application's actor id. */
  by: string;
  reason: string;
  /** Epoch ms at which it was committed (the time the marker write was issued). */
  at: number;
}

/**
 * The cancel marker of one business event (`cancel#<tenant>:<eventId>`): every dispatch of a cancellable
 * purpose for that event reads it, strongly consistently, after its `dispatching` write and before the
 * provider call. Not archived (no history); the rows it stopped carry the cancel in their own history.
 */
export interface CancelMarker {
  pk: string;
  kind: 'cancel';
  tenant: string;
  eventId: string;
  orders: CancelOrder[];
  ttl: number;
}

export type CancelCommitResult =
  | { kind: 'committed'; order: CancelOrder }
  | { kind: 'exists'; order: CancelOrder };

/** A history entry that records a fact about a row without moving it (e.g. `cancel_too_late`). */
export interface AnnotationRequest {
  pk: string;
  /** The row's state, which does not change; the write is conditioned on it and on the version. */
  state: DeliveryState;
  expectedVersion: number;
  by: string;
  why: string;
  now: number;
}

export interface Ledger {
  /** Conditional put: the row is created only if no row has this key. A conflict returns the existing row. */
  claim(record: DeliveryRecord): Promise<ClaimResult>;
  /** Version- and state-conditioned transition that appends one history entry. Never unconditional. */
  transition(request: TransitionRequest): Promise<TransitionResult>;
  get(pk: string, consistent?: boolean): Promise<DeliveryRecord | undefined>;
  /** Rows in the sparse attention index for one state, oldest first. */
  listAttention(state: DeliveryState, options?: { limit?: number; cursor?: string }): Promise<AttentionPage>;
  /**
   * Seals (or re-arms) a parked notification: creates the item if absent, otherwise moves its due time
   * to `dueAt` and records the reason. The ciphertext of an existing seal is never replaced.
   */
  park(seal: Omit<SealedIntent, 'pk' | 'kind' | 'resumes'>): Promise<void>;
  /** Moves a seal's due time; `resumed` counts a re-publish. False when there is no seal. */
  rearm(logicalKey: string, dueAt: number, reason: string, resumed?: boolean): Promise<boolean>;
  getSeal(logicalKey: string): Promise<SealedIntent | undefined>;
  /** Deletes a seal (the notification is final). */
  release(logicalKey: string): Promise<void>;
  /** Seals whose due time has come, earliest first. */
  listDue(
    now: number,
    options?: { limit?: number; cursor?: string },
  ): Promise<{
    items: SealedIntent[];
    cursor?: string;
  }>;
  /**
   * Finds the row a provider event refers to by its idempotency key (the hash providers carry in tags and
   * contexts), among rows in the attention index. Evidence can only change rows that are waiting for it,
   * and those are exactly the indexed ones, so this reads the attention rows, never the whole table.
   */
  findWaitingByIdempotencyKey(
    idempotencyKey: string,
    states?: readonly DeliveryState[],
  ): Promise<{ record?: DeliveryRecord; consumedReadUnits: number }>;
  /** Creates the fallback pointer if absent and returns the current one. */
  openFlow(logicalKey: string, order: Channel[]): Promise<FallbackFlow>;
  /** Moves the pointer from `fromIndex` to `fromIndex + 1`, conditioned on it still being `fromIndex`. */
  advanceFlow(
    logicalKey: string,
    fromIndex: number,
    expectedVersion: number,
  ): Promise<FallbackFlow | undefined>;
  getFlow(logicalKey: string): Promise<FallbackFlow | undefined>;
  /** Commits one cancel order on the event's marker with a conditional write (a repeated scope is refused). */
  commitCancel(tenant: string, eventId: string, order: CancelOrder, ttl: number): Promise<CancelCommitResult>;
  /** The event's cancel marker, read strongly consistently. */
  getCancelMarker(tenant: string, eventId: string): Promise<CancelMarker | undefined>;
  /** Appends a history entry in the row's current state (version + 1); false when the row moved. */
  annotate(request: AnnotationRequest): Promise<boolean>;
}

/**
 * What a queue batch's read-only gates need, read once for the whole batch. `suppression` answers only
 * for recipients that were read (undefined otherwise, and the dispatcher reads for itself).
 */
export interface GateFacts {
  suppression(
    tenant: string,
    recipientRef: string,
    channel: Channel,
  ): { suppressed: boolean; reason?: string } | undefined;
  flowExists(logicalKey: string): boolean | undefined;
}

export interface GateFactsReader {
  read(
    recipients: ReadonlyArray<{ tenant: string; recipientRef: string }>,
    logicalKeys: readonly string[],
  ): Promise<GateFacts>;
}

export interface SuppressionList {
  isSuppressed(
    tenant: string,
    recipientRef: string,
    channel: Channel,
  ): Promise<{ suppressed: boolean; reason?: string }>;
  suppress(
    tenant: string,
    recipientRef: string,
    channel: Channel | '*',
    reason: string,
    details?: SuppressionDetails,
  ): Promise<void>;
  /** Links a recipient's opt-out entry to its number's, so the number's opt-in lifts both (lib/ledger/optOut.ts). */
  linkOptOut?(numberRef: string, tenant: string, recipientRef: string): Promise<void>;
}

/** Where a suppression came from: the provider event (or operator) and when. */
export interface SuppressionDetails {
  /** Provider event id (`ses:<id>:Bounce`) or `operator:<id>`. */
  source: string;
  at: number;
  by: string;
}
