import type { BundleDocument } from '../archive/bundle.js';
import type { Clock } from '../domain/clock.js';
import type { Ledger, SuppressionList } from '../ledger/port.js';
import type { CancelReport, CancelRequest } from '../publish/cancelNotifications.js';
import type { OperatorDecisions } from '../reconcile/OperatorDecisions.js';
import type { Authenticator } from './auth.js';
import type {
  AuditLog,
  AuditQueries,
  CapabilityLookup,
  CircuitsReadModel,
  HoldsReadModel,
  LedgerStatsSource,
  NotificationSearch,
  SloReadModel,
  SuppressionEntry,
} from './ports.js';
import type { StaticFiles } from './staticFiles.js';

/** Builds a notification's export bundle (lib/archive/bundle.ts) as one JSON document for download. */
export type BundleExporter = (
  subject: string,
  scope: { tenant: string; from: string; to: string },
) => Promise<BundleDocument>;

export interface ConsoleDeps {
  ledger: Ledger;
  decisions: OperatorDecisions;
  authenticate: Authenticator;
  clock: Clock;
  /** Rows by state of one tenant (or all), now: the overview's ledger figures. */
  stats: LedgerStatsSource;
  /** Find a notification by event id, recipient ref, provider message id or dedupe key. */
  search?: NotificationSearch;
  /** The timeline's export-bundle link (local: the archive folder and the local signing key). */
  exportBundle?: BundleExporter;
  capabilities: CapabilityLookup;
  auditLog: AuditLog;
  audit?: AuditQueries;
  /** The SLO attainment / error-budget panel's source (issue 28). Absent: the panel is not shown. */
  slo?: SloReadModel;
  /** Open transport holds (issue 25). Absent: the panel is not shown. */
  holds?: HoldsReadModel;
  /** Provider circuits of the failover channels (issue 29). Absent: the panel is not shown. */
  circuits?: CircuitsReadModel;
  suppressions?: () => Promise<SuppressionEntry[]>;
  /** Operators may add a suppression (there is no removal in the suppression list port yet). */
  suppressionList?: SuppressionList;
  dlqDepth?: () => Promise<number>;
  /**
   * Cancel by business identity (`cancelNotifications()`): the operator is the authenticated principal.
   * The console holds no provider credentials, so a message a provider already holds for later is
   * reported `cancel_unconfirmed` (run `sendproof cancel` where the provider credentials are).
   */
  cancel?: (request: CancelRequest) => Promise<CancelReport>;
  /** The page and its files (local server); in AWS CloudFront serves them and this is absent. */
  staticFiles?: StaticFiles;
  /** Decision rows per principal per minute (a token bucket; the bulk size counts). Default 60. */
  decisionRowsPerMinute?: number;
  /** Allowed browser origin for the API (AWS: the CloudFront domain). Absent: same origin only. */
  allowedOrigin?: string;
  /** Unexpected failures (a 500): name and message only, never a request body. */
  logError?: (error: unknown) => void;
  /** Days the overview's archive figures cover (default 7). */
  overviewDays?: number;
}
