import { readFileSync } from 'node:fs';
import type { CapacityCostsResult, ScenarioCosts, ScenarioName } from './capacityCosts.js';
import type { UseByResource } from './capacityProxy.js';
import type { BenchResults } from './results.js';

/**
 * The costs the capacity model reads: a small typed interface, filled from the benchmark's result file
 * (bench/results/latest.json) by `costsFromBench`. The model never measures and never hard-codes a unit:
 * when the benchmark measures something new (fewer evidence write units, a batched evidence path, a
 * faster dispatcher), the next `npm run bench` writes it and the model's answers follow. A harness that
 * writes its results differently only needs a new `costsFromBench`.
 */
export interface CapacityCosts {
  source: {
    benchStartedAt: string;
    benchMode: string;
    capacityMeasuredAt: string;
    capacityCommand: string;
  };
  /** Per notification of each kind, through the real pipeline (the bench's `capacity` section). */
  scenarios: Record<ScenarioName, ScenarioCosts>;
  /** The dispatcher's gate-facts read per queue batch. */
  perBatch: UseByResource;
  /** The dispatcher's transport-hold gate reads (bench/capacityCosts.ts `holdCheck`); absent in older results. */
  holdCheck?: { readsPerRefresh: number; readUnitsPerRead: number; refreshMs: number };
  /** One reconcile run with nothing to do. */
  perRun: { use: UseByResource; invocations: number; ms: number };
  /** Dispatch time per record (the latency phase's median, one notification at a time), ms. */
  dispatchMs: number;
  /** A reconcile page's wall time, ms. */
  reconcileMsPerInvocation: number;
  /** Pushed provider evidence (SES/SMS events to the evidence function), per event (protocol floor). */
  evidencePush: {
    eventsPerNotification: number;
    writeUnitsPerEvent: number;
    readUnitsPerEvent: number;
    requestsPerEvent: number;
    /** Evidence-function invocations per event: 1 when each event is its own invocation. */
    invocationsPerEvent: number;
    /** SQS requests per event when events reach the function through a queue (0 without one). */
    sqsRequestsPerEvent: number;
  };
  /** Attention-index read units per waiting `unknown` row per reconcile pass (reconcile phase). */
  reconcileReadUnitsPerRow: number;
  /** Archive transitions per S3 object (archive phase). */
  archive: { transitionsPerObject: number };
  /** Shared pacing: slot writes per execution environment per slot (pacing phase, most environments). */
  pacing?: { writesPerEnvironmentPerSlot: number; environments: number; slotMs: number };
}

export class MissingMeasurementError extends Error {
  constructor(missing: string[], file: string) {
    super(
      `${file} lacks what the capacity model needs: ${missing.join(', ')}. Run \`npm run bench\` (or, for the ` +
        'capacity section alone, `npm run capacity -- --measure`).',
    );
    this.name = 'MissingMeasurementError';
  }
}

export const costsFromBench = (results: BenchResults, file = 'bench/results/latest.json'): CapacityCosts => {
  const capacity: CapacityCostsResult | undefined = results.capacity;
  const missing = [
    ...(capacity ? [] : ['capacity']),
    ...(results.latency ? [] : ['latency']),
    ...(results.protocolFloor ? [] : ['protocolFloor']),
    ...(results.reconcile?.rows.length ? [] : ['reconcile']),
    ...(results.archive ? [] : ['archive']),
  ];
  if (missing.length > 0 || !capacity || !results.latency || !results.protocolFloor || !results.archive)
    throw new MissingMeasurementError(missing, file);
  // Fields a newer benchmark writes (evidence drained from a queue in batches) are read when present.
  const floor = results.protocolFloor as BenchResults['protocolFloor'] & {
    invocationsPerNotification?: { evidence?: number };
    evidence: { sqsRequestsPerEvent?: number };
  };
  const reconcileRow = results.reconcile!.rows.at(-1)!;
  const pacingRow = [...(results.pacing ?? [])].sort((a, b) => b.environments - a.environments)[0];
  const pacing = (() => {
    if (!pacingRow || pacingRow.sendsPerSecond <= 0) return undefined;
    const elapsedMs = (pacingRow.notifications / pacingRow.sendsPerSecond) * 1000;
    const slots = Math.max(1, elapsedMs / pacingRow.slotMs);
    return {
      writesPerEnvironmentPerSlot: pacingRow.slotWriteUnits / (slots * pacingRow.environments),
      environments: pacingRow.environments,
      slotMs: pacingRow.slotMs,
    };
  })();
  return {
    source: {
      benchStartedAt: results.startedAt,
      benchMode: results.mode,
      capacityMeasuredAt: capacity.measuredAt,
      capacityCommand: capacity.command,
    },
    scenarios: capacity.scenarios,
    perBatch: capacity.perBatch,
    ...(capacity.holdCheck && capacity.holdCheck.reads > 0
      ? {
          holdCheck: {
            readsPerRefresh: capacity.holdCheck.reads / Math.max(1, capacity.holdCheck.refreshes),
            readUnitsPerRead: capacity.holdCheck.readUnits / capacity.holdCheck.reads,
            refreshMs: capacity.holdCheck.refreshMs,
          },
        }
      : {}),
    perRun: capacity.perRun,
    dispatchMs: results.latency.notificationMs.p50,
    reconcileMsPerInvocation: capacity.reconcileMsPerInvocation,
    evidencePush: {
      eventsPerNotification: floor.evidence.eventsPerNotification,
      writeUnitsPerEvent: floor.evidence.writeUnitsPerEvent,
      readUnitsPerEvent: floor.evidence.readUnitsPerEvent,
      requestsPerEvent: floor.evidence.requestsPerEvent,
      invocationsPerEvent:
        floor.invocationsPerNotification?.evidence !== undefined && floor.evidence.eventsPerNotification > 0
          ? floor.invocationsPerNotification.evidence / floor.evidence.eventsPerNotification
          : 1,
      sqsRequestsPerEvent: floor.evidence.sqsRequestsPerEvent ?? 0,
    },
    reconcileReadUnitsPerRow: reconcileRow.readUnits / Math.max(1, reconcileRow.unknownRows),
    archive: { transitionsPerObject: 100 / Math.max(1e-9, results.archive.objectsPer100Transitions) },
    ...(pacing ? { pacing } : {}),
  };
};

export const loadCosts = (file: string): CapacityCosts =>
  costsFromBench(JSON.parse(readFileSync(file, 'utf8')) as BenchResults, file);
