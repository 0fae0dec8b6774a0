import type { ArchiveBatchingResult } from './archiveBatching.js';
import type { Goal, Summary, Verdict } from './stats.js';

/** The shape of bench/results/latest.json. Bump `schema` when a field changes meaning. */
export const RESULTS_SCHEMA = 'sendproof.bench/v1';

export interface MachineInfo {
  nproc: number;
  memoryMb: number;
  cpuModel: string;
  platform: string;
  node: string;
  java: string;
  /** 1/5/15-minute load averages at the start: context for absolute times on a shared machine. */
  loadAverage: number[];
}

export type Approach = 'sendproof-ledger' | 'powertools-style' | 'transact-history';

export interface WriteUnitRow {
  scenario: string;
  approach: Approach;
  notifications: number;
  /** Write units as DynamoDB Local reports them (ReturnConsumedCapacity TOTAL, indexes included). */
  writeUnits: number;
  /**
   * What AWS bills: DynamoDB Local reports a transactional write at 1 unit per item, AWS charges 2, so
   * transactional units are doubled here. Equal to `writeUnits` for approaches without transactions.
   */
  billedWriteUnits: number;
  writeRequests: number;
  readUnits: number;
  perNotification: number;
  billedPerNotification: number;
  /** Transition history kept per notification (entries on the row or items beside it). */
  historyEntries: number;
  note?: string;
}

export interface ThroughputRound {
  round: number;
  rawWrites: number;
  rawWritesPerSecond: number;
  ceilingNotificationsPerSecond: number;
  notifications: number;
  dispatcherNotificationsPerSecond: number;
  ratio: number;
  /** CPU ms (user + system) of the dispatcher process per notification: the Lambda bill's driver. */
  cpuMsPerNotification?: number;
  /** The same for one Powertools idempotent call (no send, no history), same process, same round. */
  powertoolsCpuMsPerCall?: number;
  /** The real @aws-lambda-powertools/idempotency (makeIdempotent + DynamoDBPersistenceLayer), same run. */
  powertoolsCallsPerSecond: number;
  /** Bare conditional puts/s of a Powertools-shaped record to its own table (no index, no stream). */
  powertoolsRawWritesPerSecond: number;
  /** Powertools calls/s ÷ (its own raw writes/s ÷ 2): how close it gets to its own two-write floor. */
  powertoolsRatio: number;
}

export interface ThroughputResult {
  concurrency: number;
  writesPerNotification: number;
  rounds: ThroughputRound[];
  medianRatio: number;
  medianPowertoolsRatio: number;
  medianCpuMsPerNotification?: number;
  medianPowertoolsCpuMsPerCall?: number;
  peakRssMb: number;
  rssBeforeMb: number;
}

export interface LatencyResult {
  notifications: number;
  concurrency: number;
  ledgerMs: Summary;
  transportMs: Summary;
  /** Ledger time / (ledger + transport) time, per notification. */
  ledgerShare: Summary;
  /** The suppression check (a DynamoDB read, not a ledger call), per notification. */
  suppressionMs: Summary;
  /** Whole `dispatcher.handle` per notification. */
  notificationMs: Summary;
}

export interface ReconcileRow {
  tableRows: number;
  unknownRows: number;
  pages: number;
  readUnits: number;
  ms: number;
  /** Which code ran the pass: the real Reconciler when it exists, else the ledger's listAttention paging. */
  via: string;
}

export interface BundleRow {
  fn: string;
  entry: string;
  /** What a cold start reads: index.mjs and the chunks it imports statically (the module path). */
  bytes: number;
  gzipBytes: number;
  /** Every file of the bundle, the chunks loaded on demand (a dynamic import) included. */
  totalBytes?: number;
  files?: number;
}

/** One package's share of a bundle (esbuild metafile, bytes in the minified output). */
export interface PackageBytes {
  /** An npm package name, or a lib/ folder of this repository (`lib/dispatch`). */
  name: string;
  /** Bytes on the module path (index.mjs and its static chunks): what every cold start reads. */
  modulePathBytes: number;
  /** Bytes in chunks loaded only on demand. */
  onDemandBytes: number;
}

export interface ColdStartResult {
  awsSdk: 'bundled' | 'external';
  esbuild: Record<string, unknown>;
  bundles: BundleRow[];
  /** The same entries with `@aws-sdk/*` external (sizes only: the runtime would provide the SDK). */
  bundlesSdkExternal: BundleRow[];
  dispatcherInitMs: number[];
  medianInitMs: number;
  /** A bundle of only the DynamoDB client + document client, measured interleaved: the SDK floor. */
  referenceInitMs: number[];
  medianReferenceInitMs: number;
  /** CPU ms (user + system) of the same imports: less sensitive than wall time to a busy shared machine. */
  dispatcherInitCpuMs?: number[];
  referenceInitCpuMs?: number[];
  /** The dispatcher bundle per package, largest module-path share first (esbuild metafile). */
  dispatcherPackages?: PackageBytes[];
  /** Module init per function (median ms and ÷ the reference, same run); `error` when it did not start. */
  perFunction?: Array<{ fn: string; medianInitMs?: number; ratio?: number; error?: string }>;
  note?: string;
}

export interface CliTimingRow {
  command: string;
  ms: number[];
  medianMs: number;
  /** Whether the AWS SDK's Node-version warning reached stderr in any run. */
  sdkWarning: boolean;
}

export interface CliTimingResult {
  runs: number;
  rows: CliTimingRow[];
  /** One `--help` through tsx from the TypeScript sources, for comparison. */
  fromSourceHelpMs: number;
}

/** The happy path through the SQS handler in batches, metered (bench/protocolFloor.ts). */
export interface ProtocolFloorResult {
  notifications: number;
  batchSize: number;
  writeRequests: number;
  writeUnits: number;
  readRequests: number;
  readUnits: number;
  /** DynamoDB requests (writes + reads) per notification. */
  requestsPerNotification: number;
  writesPerNotification: number;
  writeUnitsPerNotification: number;
  readUnitsPerNotification: number;
  /** History entries per notification: what the archive stores. */
  transitionsPerNotification: number;
  evidence: {
    eventsPerNotification: number;
    requestsPerEvent: number;
    writeUnitsPerEvent: number;
    readUnitsPerEvent: number;
  };
}

/** Dollars per million notifications, excluding provider fees (bench/cost.ts, from bench/costRun.ts). */
export interface CostResult {
  /** The cost run's measurement and report, as `npm run bench:cost` writes them. */
  run?: import('./costRun.js').CostRunResult;
  pricesAsOf: string;
  region: string;
  assumptions: Record<string, number | string>;
  scenarios: Array<{
    name: 'happy' | 'realistic_mix';
    description: string;
    totalPerMillion: number;
    perMillion: Record<string, number>;
    units: Record<string, number>;
    byService?: Record<string, number>;
  }>;
  references: { sesPerMillion: number; hostedPlatformPerMillion: number; hostedPlatformSource: string };
}

export interface TargetResult {
  id: string;
  description: string;
  measured: number;
  goal: Goal;
  verdict: Verdict;
}

export interface BenchResults {
  schema: typeof RESULTS_SCHEMA;
  mode: 'quick' | 'full';
  command: string;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  machine: MachineInfo;
  writeUnits?: WriteUnitRow[];
  throughput?: ThroughputResult;
  latency?: LatencyResult;
  reconcile?: { rows: ReconcileRow[]; readsEqual: boolean };
  /** Read units per provider event at 100 and 10,000 waiting rows (bench/evidenceReads.ts). */
  evidenceReads?: import('./evidenceReads.js').EvidenceReadsRow[];
  coldStart?: ColdStartResult;
  archive?: ArchiveBatchingResult;
  cli?: CliTimingResult;
  /** Write units the shared send pace adds per notification (bench/pacingWrites.ts). */
  pacing?: import('./pacingWrites.js').PacingWritesRow[];
  protocolFloor?: ProtocolFloorResult;
  cost?: CostResult;
  /** Per-notification costs through the real pipeline, per table and index (bench/capacityCosts.ts). */
  capacity?: import('./capacityCosts.js').CapacityCostsResult;
  /** The capacity model against a run of the pipeline at a modest rate (bench/capacityValidate.ts). */
  capacityValidation?: import('./capacityValidate.js').ValidationResult;
  targets: TargetResult[];
}
