/**
 * Metric names shared by the functions that emit them (Powertools EMF) and the CDK alarms that watch
 * them. Every function runs with POWERTOOLS_SERVICE_NAME = SERVICE_NAME, so Powertools adds the
 * dimension `service: SERVICE_NAME` to every metric; alarms use the same dimension.
 */
export const METRICS_NAMESPACE = 'Sendproof';
export const SERVICE_NAME = 'sendproof';

export const METRIC = {
  /** Dispatcher: one per record outcome, with the outcome as metric name. */
  intentsInvalid: 'IntentsInvalid',
  claims: 'Claims',
  claimConflicts: 'ClaimConflicts',
  accepted: 'Accepted',
  rejected: 'Rejected',
  unknown: 'UnknownOutcomes',
  expired: 'Expired',
  suppressed: 'Suppressed',
  blocked: 'ContentMismatchBlocked',
  retries: 'TransportRetries',
  /** A committed cancel marker stopped a dispatch before its provider call. */
  cancelled: 'Cancelled',
  /**
   * Sealing an intent on its last receive (or at a batch's start, for one) failed: if that handling
   * then dies, its claimed/dispatching row is owned only by the message on the intake DLQ (alarmed).
   */
  sealFailures: 'LastReceiveSealFailures',
  /** Reconciler (per run). */
  oldestUnknownAgeSeconds: 'OldestUnknownAgeSeconds',
  unknownRows: 'UnknownRows',
  quarantinedRows: 'QuarantinedRows',
  resolutions: 'Resolutions',
  quarantines: 'Quarantines',
  manualDecisions: 'ManualDecisions',
  lookupsUnavailable: 'LookupsUnavailable',
  /** Sweep (per run): sealed notifications re-published, rows stalled, age of the oldest non-final row. */
  resumes: 'SweepResumes',
  stalled: 'StalledRows',
  oldestNonTerminalAgeSeconds: 'OldestNonTerminalAgeSeconds',
  /** Evidence: one per fact recorded (dimensions fact, channel, purpose): delivered, bounced_*, complained, … */
  deliveryFacts: 'DeliveryFacts',
  /** Evidence events whose key hash no claim of ours carries (dimension source). */
  evidenceUnmatched: 'EvidenceUnmatched',
  /**
   * Evidence refused (dimensions source, reason): a label this deployment did not make, or an event naming
   * another message than the row's (lib/evidence/labelAuth.ts). Never applied to a row.
   */
  evidenceRefused: 'EvidenceRefused',
  /**
   * An event its key's evidence item had no room left to keep (dimension source; at most
   * MAX_EVENTS_PER_KEY per key): still applied to a row it found, but not kept for a later one.
   */
  evidenceNotKept: 'EvidenceNotKept',
  /** Webhook requests refused with 401: unsigned, forged or replayed (dimensions provider, reason). */
  webhookRefused: 'WebhookRefused',
  /** Archiver. */
  transitionsArchived: 'TransitionsArchived',
} as const;

/**
 * The one logging port of lib/: the function entries adapt it to Powertools Logger, tests capture it.
 * `extra` holds identifiers and enums only, never an address, a body or a secret.
 */
export interface Logger {
  /**
   * Per-event detail of the happy path, which the ledger row and the archive already record: off at the
   * deployed level (INFO), so it costs no CloudWatch Logs ingestion (docs/cost.md). Optional: a port
   * without it drops the line.
   */
  debug?(message: string, ...extra: Array<Record<string, unknown>>): void;
  info(message: string, ...extra: Array<Record<string, unknown>>): void;
  warn(message: string, ...extra: Array<Record<string, unknown>>): void;
  error(message: string, ...extra: Array<Record<string, unknown>>): void;
}

/**
 * The logger the reconcile, sweep and evidence paths take (they warn and inform; their failures throw).
 * It lives here, not in lib/reconcile, so lib/evidence does not import the reconciler (no import cycle).
 */
export type RunLogger = Pick<Logger, 'debug' | 'info' | 'warn'>;

/**
 * The one metrics port of lib/: the function entries adapt it to Powertools Metrics (lib never imports
 * Powertools). `dimensions` are small enums (strategy, reason), never keys or identities.
 */
export interface MetricsSink {
  count(name: string, value?: number, dimensions?: Readonly<Record<string, string>>): void;
  gauge?(name: string, value: number): void;
}
