/**
 * The one price table the cost model reads: us-east-1 on-demand list prices, each with the AWS pricing
 * page it is taken from. Provider fees (SES's $0.10 per 1,000 emails, SMS) are not Sendproof's cost and
 * appear only as references. Free tiers are ignored (a production account has spent them).
 *
 * Date assumption: the figures are the list prices published on the pages below as read on `asOf`; AWS
 * changes them rarely (DynamoDB on-demand last fell in November 2024). A later run should re-read the
 * pages and move `asOf`, not the model.
 */
export const PRICES = {
  asOf: '2026-12-02',
  region: 'us-east-1',
  items: {
    dynamoWriteUnit: {
      usd: 0.625 / 1e6,
      unit: 'write request unit',
      service: 'DynamoDB',
      source:
        'https://aws.amazon.com/dynamodb/pricing/on-demand/ ($0.625 per million write request units, Standard table class)',
    },
    dynamoReadUnit: {
      usd: 0.125 / 1e6,
      unit: 'read request unit',
      service: 'DynamoDB',
      source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/ ($0.125 per million read request units)',
    },
    s3Put: {
      usd: 0.005 / 1e3,
      unit: 'PUT request',
      service: 'S3',
      source: 'https://aws.amazon.com/s3/pricing/ (S3 Standard, $0.005 per 1,000 PUT, COPY, POST, LIST)',
    },
    s3Get: {
      usd: 0.0004 / 1e3,
      unit: 'GET request',
      service: 'S3',
      source: 'https://aws.amazon.com/s3/pricing/ (S3 Standard, $0.0004 per 1,000 GET, SELECT)',
    },
    sqsRequest: {
      usd: 0.4 / 1e6,
      unit: 'request (up to 10 messages; each 64 KB chunk of a payload is one request)',
      service: 'SQS',
      source: 'https://aws.amazon.com/sqs/pricing/ (standard queue, $0.40 per million requests)',
    },
    lambdaRequest: {
      usd: 0.2 / 1e6,
      unit: 'invocation',
      service: 'Lambda',
      source: 'https://aws.amazon.com/lambda/pricing/ ($0.20 per million requests)',
    },
    lambdaGbSecond: {
      usd: 0.0000133334,
      unit: 'GB-second (arm64, duration rounded up to 1 ms)',
      service: 'Lambda',
      source:
        'https://aws.amazon.com/lambda/pricing/ (Arm, $0.0000133334 per GB-s, first 7.5 billion GB-s a month)',
    },
    kmsRequest: {
      usd: 0.03 / 1e4,
      unit: 'request',
      service: 'KMS',
      source: 'https://aws.amazon.com/kms/pricing/ ($0.03 per 10,000 requests)',
    },
    stepFunctionsTransition: {
      usd: 0.025 / 1e3,
      unit: 'state transition (Standard workflow)',
      service: 'Step Functions',
      source:
        'https://aws.amazon.com/step-functions/pricing/ (Standard workflows, $0.025 per 1,000 state transitions)',
    },
    schedulerInvocation: {
      usd: 1 / 1e6,
      unit: 'scheduled invocation',
      service: 'EventBridge',
      source: 'https://aws.amazon.com/eventbridge/pricing/ (Scheduler, $1.00 per million invocations)',
    },
    eventBridgeEvent: {
      usd: 1 / 1e6,
      unit: 'custom event published (each 64 KB chunk is one)',
      service: 'EventBridge',
      source:
        'https://aws.amazon.com/eventbridge/pricing/ (custom events, $1.00 per million; events from AWS services such as SES on the default bus are free)',
    },
    snsPublish: {
      usd: 0.5 / 1e6,
      unit: 'publish (each 64 KB chunk is one; delivery to SQS is free)',
      service: 'SNS',
      source: 'https://aws.amazon.com/sns/pricing/ ($0.50 per million requests; SQS deliveries free)',
    },
    logIngestGb: {
      usd: 0.5,
      unit: 'GB of log data ingested (Standard class; GiB, an event counted as its UTF-8 bytes + 26)',
      service: 'CloudWatch',
      source: 'https://aws.amazon.com/cloudwatch/pricing/ (Logs, Standard, collect: $0.50 per GB)',
    },
    customMetricMonth: {
      usd: 0.3,
      unit: 'custom metric (name × dimension set) a month',
      service: 'CloudWatch',
      source: 'https://aws.amazon.com/cloudwatch/pricing/ (metrics, $0.30 per metric a month, first 10,000)',
    },
    xrayTrace: {
      usd: 5 / 1e6,
      unit: 'trace recorded',
      service: 'X-Ray',
      source: 'https://aws.amazon.com/xray/pricing/ ($5.00 per million traces recorded)',
    },
  },
  /** Reference points for the README, not part of Sendproof's cost. */
  references: {
    sesEmail: { usd: 0.1 / 1e3, source: 'https://aws.amazon.com/ses/pricing/ ($0.10 per 1,000 emails)' },
    hostedPlatform: {
      usd: 1.2 / 1e3,
      source: 'Novu Cloud overage, $1.20 per 1,000 workflow runs (novu.co/pricing, May 2026)',
    },
  },
} as const;

export type CostItem = keyof typeof PRICES.items;
export type Service = (typeof PRICES.items)[CostItem]['service'];

export const COST_ITEMS = Object.keys(PRICES.items) as CostItem[];
