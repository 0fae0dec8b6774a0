import type { AuditResult } from '../archive/DuckDbAudit.js';
import type { NamedQuery } from '../archive/namedQueries.js';
import type { Channel } from '../domain/purposes.js';
import type { TransportCapabilities } from '../transports/port.js';

/** Rows by state and the oldest age of each non-terminal state (from `attnAt`, else `updatedAt`). */
export interface LedgerStats {
  rows: number;
  byState: Record<string, number>;
  oldestAgeSeconds: Record<string, number>;
}

/** The archive's queries: DuckDB over the local mirror, or Athena in AWS. Same SQL text either way. */
export interface AuditQueries {
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
