/**
 * Dollars per million notifications: measured units × published on-demand prices. The prices are a
 * dated table with their sources; the units come from the benchmark run (write and read units from
 * ReturnConsumedCapacity, requests counted by the meters, durations from the throughput phase).
 */

/** us-east-1 on-demand list prices, as published on the day below. Provider fees are not included. */
export const PRICES = {
  asOf: '2026-11-30',
  region: 'us-east-1',
  items: {
    dynamoWriteUnit: {
      usd: 0.625 / 1e6,
      unit: 'write request unit',
      source: 'aws.amazon.com/dynamodb/pricing/on-demand ($0.625 per million WRU, standard table class)',
    },
    dynamoReadUnit: {
      usd: 0.125 / 1e6,
      unit: 'read request unit',
      source: 'aws.amazon.com/dynamodb/pricing/on-demand ($0.125 per million RRU)',
    },
    s3Put: {
      usd: 0.005 / 1e3,
      unit: 'PUT request',
      source: 'aws.amazon.com/s3/pricing (S3 Standard, $0.005 per 1,000 PUT/COPY/POST/LIST)',
    },
    s3Get: {
      usd: 0.0004 / 1e3,
      unit: 'GET request',
      source: 'aws.amazon.com/s3/pricing (S3 Standard, $0.0004 per 1,000 GET)',
    },
    sqsRequest: {
      usd: 0.4 / 1e6,
      unit: 'request (a batch of up to 10 is one)',
      source: 'aws.amazon.com/sqs/pricing (standard queue, $0.40 per million requests)',
    },
    lambdaRequest: {
      usd: 0.2 / 1e6,
      unit: 'invocation',
      source: 'aws.amazon.com/lambda/pricing ($0.20 per million requests)',
    },
    lambdaGbSecond: {
      usd: 0.0000133334,
      unit: 'GB-second (arm64)',
      source: 'aws.amazon.com/lambda/pricing (Arm, first 7.5 billion GB-s per month)',
    },
    kmsRequest: {
      usd: 0.03 / 1e4,
      unit: 'request',
      source: 'aws.amazon.com/kms/pricing ($0.03 per 10,000 requests)',
    },
    stepFunctionsTransition: {
      usd: 0.025 / 1e3,
      unit: 'state transition',
      source: 'aws.amazon.com/step-functions/pricing (standard workflows, $0.025 per 1,000)',
    },
    schedulerInvocation: {
      usd: 1 / 1e6,
      unit: 'invocation',
      source: 'aws.amazon.com/eventbridge/pricing (Scheduler, $1.00 per million after the free tier)',
    },
  },
  /** Reference points for the README, not part of Sendproof's cost. */
  references: {
    sesEmail: { usd: 0.1 / 1e3, source: 'aws.amazon.com/ses/pricing ($0.10 per 1,000 emails)' },
    hostedPlatform: {
      usd: 1.2 / 1e3,
      source: 'Novu Cloud overage, $1.20 per 1,000 workflow runs (novu.co/pricing, May 2026)',
    },
  },
} as const;

export type CostItem = keyof typeof PRICES.items;

/** What one notification consumes, on average, per priced item. */
export type UnitsPerNotification = Readonly<Record<CostItem, number>>;

export interface CostBreakdown {
  /** USD per million notifications, excluding provider fees. */
  totalPerMillion: number;
  perMillion: Readonly<Record<CostItem, number>>;
}

export const costPerMillion = (units: UnitsPerNotification): CostBreakdown => {
  const perMillion = Object.fromEntries(
    (Object.keys(PRICES.items) as CostItem[]).map((item) => [
      item,
      units[item] * PRICES.items[item].usd * 1e6,
    ]),
  ) as Record<CostItem, number>;
  const totalPerMillion = Object.values(perMillion).reduce((a, b) => a + b, 0);
  return { totalPerMillion, perMillion };
};

/** How the deployment batches and sizes things: the CDK defaults, and the month the fixed costs spread over. */
export interface DeploymentShape {
  /** SQS event source batch size (records per dispatcher invocation). */
  intakeBatchSize: number;
  /** Records the publisher puts in one SendMessageBatch. */
  publishBatchSize: number;
  dispatcherMemoryMb: number;
  /** Records processed at once inside one invocation. */
  recordConcurrency: number;
  /** Archive transitions per S3 object (measured by the archive phase; 1 when one object per record). */
  transitionsPerArchiveObject: number;
  /** Stream records per archiver invocation (the event source's batch). */
  transitionsPerArchiveInvocation: number;
  transitionsPerNotification: number;
  /** Fixed monthly work spread over this many notifications (reconcile schedule, idle polling). */
  notificationsPerMonth: number;
  /** The evidence queue's event source: most events per invocation, and how long it gathers them (s). */
  evidenceBatchSize: number;
  evidenceBatchingWindowSeconds: number;
  reconcileRunsPerMonth: number;
  stepFunctionsTransitionsPerRun: number;
}

export interface MeasuredPath {
  writeUnits: number;
  readUnits: number;
  /** Wall time of one notification through the dispatcher (ledger + provider), ms. */
  dispatchMs: number;
  /** Provider evidence events per notification (SES Send + Delivery, …), read from the evidence queue in batches. */
  evidenceEvents: number;
  /** DynamoDB units each evidence event costs. */
  evidenceWriteUnits: number;
  evidenceReadUnits: number;
  /** Seal and open calls (KMS GenerateDataKey / Decrypt), per notification. */
  kmsRequests: number;
}

/**
 * Turns a measured path into units per notification. Lambda time: a batch runs `recordConcurrency`
 * records at once, so one notification occupies the function for about dispatchMs / recordConcurrency.
 */
/**
 * Events per evidence invocation: the event source takes up to the batch size, or what arrives within its
 * batching window at the month's average rate, whichever is fewer (at least one).
 */
export const evidenceEventsPerInvocation = (
  eventsPerNotification: number,
  shape: DeploymentShape,
): number => {
  const eventsPerSecond = (shape.notificationsPerMonth * eventsPerNotification) / (30 * 86_400);
  return Math.max(
    1,
    Math.min(shape.evidenceBatchSize, eventsPerSecond * shape.evidenceBatchingWindowSeconds),
  );
};

/** Lambda invocations one notification costs (dispatch batch share, evidence batches, archive, reconcile share). */
export const invocationsPerNotification = (units: UnitsPerNotification): number => units.lambdaRequest;

export const unitsFor = (path: MeasuredPath, shape: DeploymentShape): UnitsPerNotification => {
  const dispatcherGbSeconds =
    ((path.dispatchMs / 1000) * (shape.dispatcherMemoryMb / 1024)) / shape.recordConcurrency;
  const evidenceGbSeconds = path.evidenceEvents * 0.05 * (256 / 1024);
  const archiveObjects = shape.transitionsPerNotification / shape.transitionsPerArchiveObject;
  const fixedShare = 1 / shape.notificationsPerMonth;
  const evidenceInvocations =
    path.evidenceEvents > 0
      ? path.evidenceEvents / evidenceEventsPerInvocation(path.evidenceEvents, shape)
      : 0;
  return {
    dynamoWriteUnit: path.writeUnits + path.evidenceEvents * path.evidenceWriteUnits,
    dynamoReadUnit: path.readUnits + path.evidenceEvents * path.evidenceReadUnits,
    s3Put: archiveObjects,
    s3Get: 0,
    // Publish (SendMessageBatch), then the event source's receive and delete, one each per batch; each
    // evidence event is one SendMessage (the EventBridge target, the SNS subscription), then its batch's
    // receive and delete.
    sqsRequest:
      1 / shape.publishBatchSize + 2 / shape.intakeBatchSize + path.evidenceEvents + 2 * evidenceInvocations,
    lambdaRequest:
      1 / shape.intakeBatchSize +
      evidenceInvocations +
      shape.transitionsPerNotification / shape.transitionsPerArchiveInvocation +
      shape.reconcileRunsPerMonth * fixedShare,
    lambdaGbSecond: dispatcherGbSeconds + evidenceGbSeconds,
    kmsRequest: path.kmsRequests,
    stepFunctionsTransition: shape.reconcileRunsPerMonth * shape.stepFunctionsTransitionsPerRun * fixedShare,
    schedulerInvocation: shape.reconcileRunsPerMonth * fixedShare,
  };
};

// ── the benchmark's cost section: measured units, the deployment's defaults, the realistic mix ──────────

/** The CDK defaults the model assumes (infra/), and the volume the fixed monthly work is spread over. */
export const DEFAULT_SHAPE: Omit<
  DeploymentShape,
  'transitionsPerArchiveObject' | 'transitionsPerNotification'
> = {
  intakeBatchSize: 10, // lib/queueDefinition.ts INTAKE_QUEUE.batchSize
  publishBatchSize: 10, // SendMessageBatch maximum, as lib/publish batches
  dispatcherMemoryMb: 512, // infra/constructs/SendproofFunction.ts default
  recordConcurrency: 5, // SENDPROOF_RECORD_CONCURRENCY default
  transitionsPerArchiveInvocation: 1, // set from the archive phase: one invocation per object written
  notificationsPerMonth: 10_000_000,
  evidenceBatchSize: 100, // infra/constructs/EvidenceRecorder.ts EVIDENCE_BATCH.batchSize
  evidenceBatchingWindowSeconds: 5, // EVIDENCE_BATCH.maxBatchingWindowSeconds
  reconcileRunsPerMonth: 8_640, // every 5 minutes, 30 days (infra/NotificationLedger.ts)
  stepFunctionsTransitionsPerRun: 4, // estimate: start, reconcile page, choice, end
};

/** The realistic mix of the issue: 5 % retried once, 1 % unknown then reconciled, 1 % bounced. */
export const MIX = { retry: 0.05, unknown: 0.01, bounce: 0.01 } as const;

export interface CostInputs {
  /** The happy path through the SQS handler in batches (bench/protocolFloor.ts). */
  floor: {
    writeUnitsPerNotification: number;
    readUnitsPerNotification: number;
    transitionsPerNotification: number;
    evidence: { eventsPerNotification: number; writeUnitsPerEvent: number; readUnitsPerEvent: number };
  };
  /**
   * The ledger's per-scenario rows from the write-unit phase (one notification at a time): the extra
   * units a retry and an unknown-then-reconciled notification cost over a happy one, same phase.
   */
  ledgerRows: ReadonlyArray<{
    scenario: string;
    notifications: number;
    perNotification: number;
    readUnits: number;
    historyEntries: number;
  }>;
  /** Wall time of one notification through the dispatcher (latency phase median), ms. */
  dispatchMs: number;
  /** Archive transitions per S3 object (archive phase). */
  transitionsPerArchiveObject: number;
}

const add = (a: UnitsPerNotification, b: Partial<UnitsPerNotification>): UnitsPerNotification =>
  Object.fromEntries(
    (Object.keys(a) as CostItem[]).map((k) => [k, a[k] + (b[k] ?? 0)]),
  ) as UnitsPerNotification;

const scale = (a: UnitsPerNotification, w: number): Partial<UnitsPerNotification> =>
  Object.fromEntries((Object.keys(a) as CostItem[]).map((k) => [k, a[k] * w]));

/**
 * Happy path and realistic mix, in units per notification and dollars per million. Every DynamoDB unit
 * is measured; SQS, Lambda and Step Functions counts follow from the deployment's batching; Lambda time
 * from the measured dispatch time. The non-happy extras are the differences the write-unit phase measured.
 */
export const costScenarios = (input: CostInputs) => {
  const shape: DeploymentShape = {
    ...DEFAULT_SHAPE,
    transitionsPerArchiveObject: input.transitionsPerArchiveObject,
    transitionsPerArchiveInvocation: input.transitionsPerArchiveObject,
    transitionsPerNotification: input.floor.transitionsPerNotification,
  };
  const happyUnits = unitsFor(
    {
      writeUnits: input.floor.writeUnitsPerNotification,
      readUnits: input.floor.readUnitsPerNotification,
      dispatchMs: input.dispatchMs,
      evidenceEvents: input.floor.evidence.eventsPerNotification,
      evidenceWriteUnits: input.floor.evidence.writeUnitsPerEvent,
      evidenceReadUnits: input.floor.evidence.readUnitsPerEvent,
      kmsRequests: 0,
    },
    shape,
  );
  const rowOf = (scenario: string) => input.ledgerRows.find((r) => r.scenario === scenario);
  const happyRow = rowOf('happy');
  const extraOf = (scenario: string): Partial<UnitsPerNotification> => {
    const row = rowOf(scenario);
    if (!row || !happyRow) return {};
    const transitions = Math.max(0, row.historyEntries - happyRow.historyEntries);
    return {
      dynamoWriteUnit: Math.max(0, row.perNotification - happyRow.perNotification),
      dynamoReadUnit: Math.max(
        0,
        row.readUnits / row.notifications - happyRow.readUnits / happyRow.notifications,
      ),
      s3Put: transitions / shape.transitionsPerArchiveObject,
    };
  };
  // A retry is one more SQS delivery (ChangeMessageVisibility, then its share of a receive, a delete
  // and an invocation) and one more dispatch; an unknown row is one reconcile lookup (in the measured
  // extra units); a bounce is a Bounce event instead of a Delivery plus the suppression put (1 WCU).
  const retryExtra: Partial<UnitsPerNotification> = {
    ...extraOf('retry_after_429'),
    sqsRequest: 1 + 2 / shape.intakeBatchSize,
    lambdaRequest: 1 / shape.intakeBatchSize,
    lambdaGbSecond: happyUnits.lambdaGbSecond,
  };
  const unknownExtra = extraOf('unknown_reconciled');
  const bounceExtra: Partial<UnitsPerNotification> = { dynamoWriteUnit: 1 };
  const zero = scale(happyUnits, 0) as UnitsPerNotification;
  const weighted = (extra: Partial<UnitsPerNotification>, w: number) =>
    scale(add(zero, extra), w) as Partial<UnitsPerNotification>;
  const mixUnits = [
    weighted(retryExtra, MIX.retry),
    weighted(unknownExtra, MIX.unknown),
    weighted(bounceExtra, MIX.bounce),
  ].reduce(add, happyUnits);
  const describe = (units: UnitsPerNotification) => ({ units, ...costPerMillion(units) });
  return { shape, happy: describe(happyUnits), mix: describe(mixUnits) };
};
