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
  reconcileRunsPerMonth: number;
  stepFunctionsTransitionsPerRun: number;
}

export interface MeasuredPath {
  writeUnits: number;
  readUnits: number;
  /** Wall time of one notification through the dispatcher (ledger + provider), ms. */
  dispatchMs: number;
  /** Provider evidence events per notification (SES Send + Delivery, …), each one evidence invocation. */
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
export const unitsFor = (path: MeasuredPath, shape: DeploymentShape): UnitsPerNotification => {
  const dispatcherGbSeconds =
    ((path.dispatchMs / 1000) * (shape.dispatcherMemoryMb / 1024)) / shape.recordConcurrency;
  const evidenceGbSeconds = path.evidenceEvents * 0.05 * (256 / 1024);
  const archiveObjects = shape.transitionsPerNotification / shape.transitionsPerArchiveObject;
  const fixedShare = 1 / shape.notificationsPerMonth;
  return {
    dynamoWriteUnit: path.writeUnits + path.evidenceEvents * path.evidenceWriteUnits,
    dynamoReadUnit: path.readUnits + path.evidenceEvents * path.evidenceReadUnits,
    s3Put: archiveObjects,
    s3Get: 0,
    // Publish (SendMessageBatch), then the event source's receive and delete, one each per batch.
    sqsRequest: 1 / shape.publishBatchSize + 2 / shape.intakeBatchSize,
    lambdaRequest:
      1 / shape.intakeBatchSize +
      path.evidenceEvents +
      shape.transitionsPerNotification / shape.transitionsPerArchiveInvocation +
      shape.reconcileRunsPerMonth * fixedShare,
    lambdaGbSecond: dispatcherGbSeconds + evidenceGbSeconds,
    kmsRequest: path.kmsRequests,
    stepFunctionsTransition: shape.reconcileRunsPerMonth * shape.stepFunctionsTransitionsPerRun * fixedShare,
    schedulerInvocation: shape.reconcileRunsPerMonth * fixedShare,
  };
};
