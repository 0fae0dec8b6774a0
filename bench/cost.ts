/**
 * Dollars per million notifications from what the cost phase measured (bench/costBench.ts): the requests
 * each function issued, the bytes it logged and the time it took per invocation, billed by AWS's rules
 * (bench/billing.ts) at the prices of bench/prices.ts. Nothing here is an assumed per-request figure
 * except what the deployment fixes (batch sizes, memory, the reconcile schedule) and the volume a month
 * the fixed costs are spread over.
 */
import {
  BYTES_PER_GB,
  billedGbSeconds,
  chunked,
  estimatedLambdaMs,
  platformLogBytesPerInvocation,
  SQS_IDLE_RECEIVES_PER_QUEUE_MONTH,
  sampledTracesPerSecond,
  sqsEventSourceRequests,
  sqsRequestsForCall,
  sqsRequestsForMessages,
} from './billing.js';
import { COST_FUNCTIONS, type CostFunction, type CostMeasurement } from './costBench.js';
import { COST_ITEMS, type CostItem, PRICES, type Service } from './prices.js';
import { median as medianOf } from './stats.js';

export { type CostItem, PRICES } from './prices.js';

/** What one notification consumes, on average, per priced item. */
export type UnitsPerNotification = Readonly<Record<CostItem, number>>;

export interface CostBreakdown {
  /** USD per million notifications, excluding provider fees. */
  totalPerMillion: number;
  perMillion: Readonly<Record<CostItem, number>>;
  byService: Readonly<Record<string, number>>;
}

const zeroUnits = (): Record<CostItem, number> =>
  Object.fromEntries(COST_ITEMS.map((k) => [k, 0])) as Record<CostItem, number>;

export const costPerMillion = (units: UnitsPerNotification): CostBreakdown => {
  const perMillion = Object.fromEntries(
    COST_ITEMS.map((item) => [item, units[item] * PRICES.items[item].usd * 1e6]),
  ) as Record<CostItem, number>;
  const byService: Record<string, number> = {};
  for (const item of COST_ITEMS) {
    const service: Service = PRICES.items[item].service;
    byService[service] = (byService[service] ?? 0) + perMillion[item];
  }
  const totalPerMillion = Object.values(perMillion).reduce((a, b) => a + b, 0);
  return { totalPerMillion, perMillion, byService };
};

/** What the deployment fixes (infra/), and the month the fixed costs spread over. */
export interface DeploymentShape {
  notificationsPerMonth: number;
  /** Intents per SendMessageBatch (lib/publish batches 10; a caller that sends one at a time pays 10×). */
  publishBatchSize: number;
  /** SQS queues read by a Lambda event source (intake, evidence): each polls when idle. */
  polledQueues: number;
  reconcileRunsPerMonth: number;
  /** State transitions of one reconcile execution with one page (Begin, ReconcilePage, MorePages?, Done). */
  stepFunctionsTransitionsPerRun: number;
  /** Active X-Ray tracing on every function and the state machine (infra/constructs/SendproofFunction.ts). */
  tracing: boolean;
}

const perInvocationGbSeconds = (m: CostMeasurement, f: CostFunction): number =>
  m.functions[f].samples.reduce(
    (sum, s) => sum + billedGbSeconds(estimatedLambdaMs(s, m.functions[f].memoryMb), m.functions[f].memoryMb),
    0,
  );

export interface FunctionCost {
  invocationsPerNotification: number;
  gbSecondsPerNotification: number;
  /** Estimated Lambda duration of one invocation (median of the phase's), ms. */
  medianEstimatedMs: number;
  medianWallMs: number;
  medianCpuMs: number;
  logBytesPerNotification: number;
}

/** The benchmark's one median (bench/stats.ts, interpolated); a function never invoked has none. */
const median = (xs: readonly number[]): number => (xs.length ? medianOf(xs) : Number.NaN);

/** Per function, per notification: invocations, GB-s and log bytes (reconcile: its schedule's share). */
const functionCosts = (m: CostMeasurement, shape: DeploymentShape): Record<CostFunction, FunctionCost> => {
  const platform = platformLogBytesPerInvocation();
  return Object.fromEntries(
    COST_FUNCTIONS.map((f) => {
      const fn = m.functions[f];
      // The reconcile function runs on its schedule, not per notification: its runs' share.
      const share =
        f === 'reconcile'
          ? shape.reconcileRunsPerMonth / m.reconcileRuns / shape.notificationsPerMonth
          : 1 / m.notifications;
      const estimated = fn.samples.map((s) => estimatedLambdaMs(s, fn.memoryMb));
      return [
        f,
        {
          invocationsPerNotification: fn.invocations * share,
          gbSecondsPerNotification: perInvocationGbSeconds(m, f) * share,
          medianEstimatedMs: median(estimated),
          medianWallMs: median(fn.samples.map((s) => s.wallMs)),
          medianCpuMs: median(fn.samples.map((s) => s.cpuMs)),
          logBytesPerNotification: (fn.logBytes + platform * fn.invocations) * share,
        },
      ];
    }),
  ) as Record<CostFunction, FunctionCost>;
};

/** The happy path, per notification, from the measured run. */
export const happyUnits = (m: CostMeasurement, shape: DeploymentShape): Record<CostItem, number> => {
  const n = m.notifications;
  const fixed = 1 / shape.notificationsPerMonth;
  const runShare = shape.reconcileRunsPerMonth / m.reconcileRuns / shape.notificationsPerMonth;
  const fc = functionCosts(m, shape);
  const units = zeroUnits();
  const perRecordFns = ['dispatch', 'evidence', 'outcomes', 'archive'] as const;
  for (const f of perRecordFns) {
    units.dynamoWriteUnit += m.functions[f].dynamo.writeUnits / n;
    units.dynamoReadUnit += m.functions[f].dynamo.readUnitsBilled / n;
  }
  units.dynamoWriteUnit += m.functions.reconcile.dynamo.writeUnits * runShare;
  units.dynamoReadUnit += m.functions.reconcile.dynamo.readUnitsBilled * runShare;
  for (const f of COST_FUNCTIONS) {
    units.lambdaRequest += fc[f].invocationsPerNotification;
    units.lambdaGbSecond += fc[f].gbSecondsPerNotification;
    units.logIngestGb += fc[f].logBytesPerNotification / BYTES_PER_GB;
  }
  // SQS: the publisher's batches; the intake event source's receives and deletes per dispatch batch;
  // EventBridge's SendMessage of every SES event, and the evidence event source's receives and deletes;
  // the idle long polls of both event sources.
  units.sqsRequest =
    (sqsRequestsForMessages(m.sqs.intakeBodyBytes, shape.publishBatchSize) +
      chunked(m.sqs.intakeBodyBytes, m.batches.dispatch).reduce((s, b) => s + sqsEventSourceRequests(b), 0) +
      m.sqs.evidenceBodyBytes.reduce((s, b) => s + sqsRequestsForCall(b), 0) +
      chunked(m.sqs.evidenceBodyBytes, m.batches.evidence).reduce(
        (s, b) => s + sqsEventSourceRequests(b),
        0,
      )) /
      n +
    shape.polledQueues * SQS_IDLE_RECEIVES_PER_QUEUE_MONTH * fixed;
  // EventBridge: the outcome events (custom events, each 64 KB chunk one); the SES events on the default
  // bus are AWS service events, free. The reconcile schedule's invocations.
  units.eventBridgeEvent =
    m.eventBridge.eventBytes.reduce((s, b) => s + Math.max(1, Math.ceil(b / 65_536)), 0) / n;
  units.schedulerInvocation = shape.reconcileRunsPerMonth * fixed;
  units.s3Put = m.s3.puts / n;
  units.stepFunctionsTransition = shape.reconcileRunsPerMonth * shape.stepFunctionsTransitionsPerRun * fixed;
  // Custom metrics are billed per metric a month, whatever the volume: the series the EMF documents define.
  units.customMetricMonth = m.metricSeries.length * fixed;
  if (shape.tracing) {
    const rate = shape.notificationsPerMonth / (30 * 86_400);
    // Per function with active tracing (the reconcile function joins its execution's trace).
    for (const f of perRecordFns)
      units.xrayTrace += sampledTracesPerSecond(fc[f].invocationsPerNotification * rate) / rate;
    units.xrayTrace += sampledTracesPerSecond(shape.reconcileRunsPerMonth / (30 * 86_400)) / rate;
  }
  return units;
};

/** The realistic mix of the issue: 5 % retried once, 1 % unknown then reconciled, 1 % bounced. */
export const MIX = { retry: 0.05, unknown: 0.01, bounce: 0.01 } as const;

/** The ledger's per-scenario rows of the write-unit phase (one notification at a time, bench/writeUnits.ts). */
export interface LedgerScenarioRow {
  scenario: string;
  notifications: number;
  perNotification: number;
  readUnits: number;
  historyEntries: number;
}

/**
 * What a retried, an unknown-then-reconciled and a bounced notification cost beyond a happy one. The
 * DynamoDB difference is the write-unit phase's (same code, one notification at a time); the Lambda,
 * SQS, log and event costs of the extra work are the happy path's measured per-record figures.
 */
export const mixExtras = (
  m: CostMeasurement,
  shape: DeploymentShape,
  ledgerRows: readonly LedgerScenarioRow[],
): Record<keyof typeof MIX, Record<CostItem, number>> => {
  const n = m.notifications;
  const fc = functionCosts(m, shape);
  const rowOf = (s: string) => ledgerRows.find((r) => r.scenario === s);
  const happy = rowOf('happy');
  /** One more stream record: its outcome event, its archive share, both functions' per-record time. */
  const perStreamRecord = (): Partial<Record<CostItem, number>> => {
    const perRecord = n / m.streamRecords;
    return {
      eventBridgeEvent: (m.eventBridge.eventBytes.length / m.streamRecords) * 1,
      s3Put: m.s3.puts / m.streamRecords,
      lambdaGbSecond:
        (fc.outcomes.gbSecondsPerNotification + fc.archive.gbSecondsPerNotification) * perRecord,
      logIngestGb:
        ((fc.outcomes.logBytesPerNotification + fc.archive.logBytesPerNotification) * perRecord) /
        BYTES_PER_GB,
    };
  };
  const extraOf = (scenario: string): Record<CostItem, number> => {
    const units = zeroUnits();
    const row = rowOf(scenario);
    if (!row || !happy) return units;
    units.dynamoWriteUnit = Math.max(0, row.perNotification - happy.perNotification);
    units.dynamoReadUnit = Math.max(
      0,
      row.readUnits / row.notifications - happy.readUnits / happy.notifications,
    );
    const transitions = Math.max(0, row.historyEntries - happy.historyEntries);
    for (const [k, v] of Object.entries(perStreamRecord())) units[k as CostItem] += (v ?? 0) * transitions;
    return units;
  };
  const retry = extraOf('retry_after_429');
  // A retry is one more delivery of the message: ChangeMessageVisibility, its share of a receive, a
  // delete and a dispatch invocation, and one more record's dispatch time and logs.
  const intakeBytes = m.sqs.intakeBodyBytes[0] ?? 1024;
  retry.sqsRequest += 1 + sqsEventSourceRequests([intakeBytes]) / m.batches.dispatch;
  retry.lambdaRequest += fc.dispatch.invocationsPerNotification;
  retry.lambdaGbSecond += fc.dispatch.gbSecondsPerNotification;
  retry.logIngestGb += fc.dispatch.logBytesPerNotification / BYTES_PER_GB;
  const unknown = extraOf('unknown_reconciled');
  // A bounce is a Bounce event in place of the Delivery, plus the suppression list's update (1 WCU).
  const bounce = zeroUnits();
  bounce.dynamoWriteUnit = 1;
  return { retry, unknown, bounce };
};

export const mixUnits = (
  happy: Record<CostItem, number>,
  extras: Record<keyof typeof MIX, Record<CostItem, number>>,
): Record<CostItem, number> => {
  const units = { ...happy };
  for (const [scenario, weight] of Object.entries(MIX) as Array<[keyof typeof MIX, number]>)
    for (const item of COST_ITEMS) units[item] += extras[scenario][item] * weight;
  return units;
};

export interface CostReport {
  shape: DeploymentShape;
  functions: Record<CostFunction, FunctionCost>;
  happy: { units: Record<CostItem, number> } & CostBreakdown;
  mix: { units: Record<CostItem, number> } & CostBreakdown;
}

export const costReport = (
  m: CostMeasurement,
  shape: DeploymentShape,
  ledgerRows: readonly LedgerScenarioRow[],
): CostReport => {
  const happy = happyUnits(m, shape);
  const mix = mixUnits(happy, mixExtras(m, shape, ledgerRows));
  return {
    shape,
    functions: functionCosts(m, shape),
    happy: { units: happy, ...costPerMillion(happy) },
    mix: { units: mix, ...costPerMillion(mix) },
  };
};
