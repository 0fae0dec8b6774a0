import type { SQSEvent, SQSRecord } from 'aws-lambda';

/**
 * One SQS record as the Lambda event source mapping delivers it to functions/dispatch, for the
 * benchmark and the tests that call the SQS handler directly (no queue in between). The shape is the
 * documented SQS event (docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, "Example Amazon SQS
 * message event"); lib/local/SqsPoller builds the same record from a message really received.
 */
export interface SqsRecordInput {
  messageId: string;
  body: string;
  /** Default `rh-<messageId>`: opaque to the handler, used only to change visibility. */
  receiptHandle?: string;
  /** ApproximateReceiveCount; default 1 (a first delivery). */
  receiveCount?: number;
  /** SentTimestamp (epoch ms); default `now`. */
  sentAt?: number;
  /** ApproximateFirstReceiveTimestamp (epoch ms); default `now`. */
  firstReceivedAt?: number;
  /** When the record is built (a manual clock's time in tests); default Date.now(). */
  now?: number;
  /** SenderId; default 'test'. */
  senderId?: string;
}

/** The intake queue's ARN in the local account (the handler reads no part of it). */
const LOCAL_INTAKE_ARN = 'arn:aws:sqs:us-east-1:000000000000:intake';

export const sqsRecord = (input: SqsRecordInput): SQSRecord => {
  const now = input.now ?? Date.now();
  return {
    messageId: input.messageId,
    receiptHandle: input.receiptHandle ?? `rh-${input.messageId}`,
    body: input.body,
    attributes: {
      ApproximateReceiveCount: String(input.receiveCount ?? 1),
      SentTimestamp: String(input.sentAt ?? now),
      SenderId: input.senderId ?? 'test',
      ApproximateFirstReceiveTimestamp: String(input.firstReceivedAt ?? now),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: LOCAL_INTAKE_ARN,
    awsRegion: 'us-east-1',
  };
};

/** A batch of first deliveries, `<prefix><i>` each (receipt handle `rh-<prefix><i>`). */
export const sqsBatch = (
  bodies: readonly string[],
  options: Omit<SqsRecordInput, 'messageId' | 'body' | 'receiptHandle'> & { idPrefix?: string } = {},
): SQSEvent => {
  const { idPrefix = 'm-', ...rest } = options;
  return { Records: bodies.map((body, i) => sqsRecord({ ...rest, messageId: `${idPrefix}${i}`, body })) };
};
