import type { AuditResult } from '../archive/DuckDbAudit.js';
import type { NamedQuery } from '../archive/namedQueries.js';
import type { Channel } from '../domain/purposes.js';
import type { DeliveryRecord } from '../ledger/port.js';
import type { TransportCapabilities } from '../transports/port.js';

/**
 * Rows by state and the oldest age of each non-terminal state (from `attnAt`, else `updatedAt`), of one
 * tenant when one is asked for (the archive panels are per tenant: the ledger figures beside them are
 * of the same tenant), with every tenant the ledger holds rows of.
 */
export interface LedgerStats {
  rows: number;
  byState: Record<string, number>;
  oldestAgeSeconds: Record<string, number>;
  /** Rows in state `accepted` per purpose and channel (what the archive's latency figures count). */
  acceptedBy?: Array<{ purpose: string; channel: string; rows: number }>;
  tenants: string[];
}

export type LedgerStatsSource = (tenant?: string) => Promise<LedgerStats>;

/** How an operator finds a notification: by what they have in hand. */
export const SEARCH_FIELDS = ['eventId', 'recipientRef', 'providerMessageId', 'dedupeKey'] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

/** Finds ledger rows by one field's exact value (at most `limit`; `truncated` when there were more). */
export interface NotificationSearch {
  find(
    field: SearchField,
    value: string,
    limit: number,
  ): Promise<{ rows: DeliveryRecord[]; truncated: boolean }>;
}

/**
 * One purpose's service-level objective over a window, as the SLO read model reports it (issue 28's
 * SLO query on the archive; lib/console/sloPanel.ts maps its reports). Fractions are 0..1. Without a
 * channel: every channel of the purpose together.
 */
export interface SloFigure {
  purpose: string;
  channel?: string;
  /** Which objective of the purpose (`accepted`, `delivered`, `duplicates`, …). */
  objectiveName?: string;
  /** The objective, e.g. 0.995. */
  objective: number;
  /** Good / eligible in the window; null when the window judged nothing (eligible 0). */
  attainment: number | null;
  /**
   * Share of the window's error budget still unspent (1 = untouched, 0 or below = spent); null when
   * there is no budget (nothing judged).
   */
  budgetLeft: number | null;
  good: number;
  eligible: number;
  window: { from: string; to: string; days: number };
}

/** The SLO panel's port: per-purpose attainment and error budget for one tenant. */
export interface SloReadModel {
  /** Where the figures come from, shown with them (e.g. `archive: named query slo-attainment`). */
  source: string;
  attainment(tenant: string, now: number): Promise<SloFigure[]>;
}

/** One open transport hold or provider circuit (issues 25/29). */
export interface OpenHold {
  kind: 'transport_hold' | 'provider_circuit';
  name: string;
  channel?: string;
  since: string;
  reason: string;
  until?: string;
}

/** The holds/circuits panel's port. */
export interface HoldsReadModel {
  source: string;
  open(): Promise<OpenHold[]>;
}

/** The archive's queries: DuckDB over the local mirror, or Athena in AWS. Same SQL text either way. */
export interface AuditQueries {
  /** The engine and where it reads, shown as each archive figure's source (`DuckDB over …`, `Athena …`). */
  engine?: string;
  list(): NamedQuery[];
  /** Runs a named query with its arguments as strings (bound to the declared types by the runner). */
  run(name: string, args: readonly string[]): Promise<AuditResult>;
}

/** The engine did not finish a named query (failed, cancelled, too slow): the console answers 502. */
export class AuditQueryFailed extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'AuditQueryFailed';
  }
}

/** One suppressed recipient (by opaque ref) with its suppressed channels and reasons. No address exists here. */
export interface SuppressionEntry {
  tenant: string;
  recipientRef: string;
  channels: Record<string, string>;
  updatedAt?: number;
}

/** An append-only record of a decision or of a denied call. */
export interface AuditEntry {
  at: string;
  kind: 'decision' | 'denied';
  /** `operator:<id>` / `viewer:<id>`, or `anonymous` when no valid token was shown. */
  principal: string;
  method: string;
  path: string;
  sourceIp: string;
  status: number;
  reason?: string;
  dedupeKey?: string;
  outcome?: string;
  decisionId?: string;
  result?: string;
}

export interface AuditLog {
  record(entry: AuditEntry): Promise<void> | void;
}

export type CapabilityLookup = (
  transport: string | undefined,
  channel: Channel,
) => TransportCapabilities | undefined;
