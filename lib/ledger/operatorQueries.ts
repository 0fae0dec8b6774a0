import type { DeliveryState } from '../domain/states.js';
import type { DeliveryRecord } from './port.js';

/** What counting needs of one ledger item: rows carry a state; seals and flow pointers carry a kind. */
export interface ItemSummary {
  /** A delivery state; on a provider-health item (`kind` provider_health), its circuit state. */
  state?: DeliveryState | 'closed' | 'open' | 'half_open';
  kind?: string;
  createdAt?: number;
  attnAt?: number;
  /** Provider-health items only (lib/transports/health.ts): which provider, and its circuit. */
  pk?: string;
  failures?: number;
  openUntil?: number;
  reason?: string;
}

/**
 * Operator reads of the whole ledger: the CLI's `status <eventId>`, `stats` and the local demo's live
 * view. Kept out of the Ledger port on purpose: each is a paginated scan, which no hot path may run and
 * the deployed functions' role is not granted.
 */
export interface OperatorQueries {
  /** Rows of one business event, oldest first. */
  findByEvent(eventId: string): Promise<DeliveryRecord[]>;
  /** One page of every item in the table, projected to what counting needs; the cursor is opaque. */
  summaries(cursor?: string): Promise<{ items: ItemSummary[]; cursor?: string }>;
  /** Every row that has a state (delivery, blocked, invalid), for small local tables only. */
  rows(): Promise<DeliveryRecord[]>;
}
