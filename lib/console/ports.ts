import type { AuditResult } from '../archive/DuckDbAudit.js';
import type { NamedQuery } from '../archive/namedQueries.js';
import type { Channel } from '../domain/purposes.js';
import type { DeliveryRecord } from '../ledger/port.js';
import type { ReasonText } from '../transports/circuitReasons.js';
import type { CircuitState } from '../transports/health.js';
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

/** One open transport hold (issue 25); provider circuits have their own panel (CircuitsReadModel). */
export interface OpenHold {
  kind: 'transport_hold';
  name: string;
  channel?: string;
  since: string;
  reason: string;
  until?: string;
}

/** The holds panel's port. */
export interface HoldsReadModel {
  source: string;
  open(): Promise<OpenHold[]>;
}

/** One provider's circuit as the circuits panel shows it (issue 29; lib/transports/health.ts). Times ISO. */
export interface CircuitEntry {
  provider: string;
  /** Its place in the channel's failover order, 1 = the primary. */
  position: number;
  state: CircuitState;
  /** Closed: 5xx / never-left answers counted in the current window (of `windowSeconds`). */
  failures: number;
  windowSeconds: number;
  /** Open: when one dispatcher may send a probe. */
  openUntil?: string;
  /** Half-open: until when the probe belongs to the dispatcher that took it. */
  probeUntil?: string;
  /** Open past `openUntil`, or half-open past its lease: the next send takes the probe. */
  probeDue: boolean;
  /** Why it last opened (an open or half-open circuit), raw and in words. */
  reason?: ReasonText;
  /** When its state last changed (the newest history entry); absent: it never changed (never opened). */
  changedAt?: string;
  changedAgeSeconds?: number;
  /** The newest state changes first, at most CIRCUIT_HISTORY_SHOWN: who (worker) and why. */
  history: Array<{ state: string; at: string; by: string; why: ReasonText }>;
}

export interface ChannelCircuits {
  channel: 'email' | 'sms';
  /** The failover order (the names the circuits are kept under). */
  providers: string[];
  circuits: CircuitEntry[];
}

/** The circuits panel's port: every failover channel's providers in order, closed ones included. */
export interface CircuitsReadModel {
  source: string;
  circuits(now: number): Promise<ChannelCircuits[]>;
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
