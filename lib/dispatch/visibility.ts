import type { SQSClient } from '@aws-sdk/client-sqs';

/**
 * The SQS call behind "come back when due": one ChangeMessageVisibility per parked message. The client may
 * be a loader, called on the first park: the SDK then stays off the module path of the happy path.
 */
export const visibilityChanger = (sqs: SQSClient | (() => Promise<SQSClient>), queueUrl: string) => {
  let client: Promise<SQSClient> | undefined;
  return async (receiptHandle: string, seconds: number): Promise<void> => {
    client ??= typeof sqs === 'function' ? sqs() : Promise.resolve(sqs);
    const pending = client;
    const [{ ChangeMessageVisibilityCommand }, ready] = await Promise.all([
      import('@aws-sdk/client-sqs'),
      pending.catch((error: unknown) => {
        client = undefined; // a failed load is tried again on the next park
        throw error;
      }),
    ]);
    await ready.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  };
};

/** SQS caps a message's visibility at 12 hours. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/**
 * Slack for the two clocks: ApproximateFirstReceiveTimestamp is SQS's clock, `now` is this function's.
 * A minute of 12 hours costs nothing; a request past the limit costs the extension.
 */
export const VISIBILITY_CLOCK_SLACK_SECONDS = 60;

/**
 * The VisibilityTimeout to request so a message comes back after `visibleAfterMs`, within what SQS still
 * allows it; undefined when it allows no more (the message then returns after the queue's own timeout).
 *
 * The 12 hours include the time the message has already been in flight: "You can continue to call
 * ChangeMessageVisibility to extend the visibility timeout to a maximum of 12 hours. If you try to extend
 * the visibility timeout beyond 12 hours, your request is rejected", and "If you attempt to set the
 * VisibilityTimeout to a value greater than the maximum time left, Amazon SQS returns an error"
 * (ChangeMessageVisibility, Amazon SQS API Reference,
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html).
 *
 * The time in flight is counted from the message's first receive (ApproximateFirstReceiveTimestamp, an
 * attribute Lambda passes on every record). For a first delivery that is this receive; for a redelivery
 * the current receive is later, and Lambda does not say when, so the first one is the bound that is
 * never rejected.
 */
export const visibilityTimeoutFor = (
  visibleAfterMs: number,
  attributes: { ApproximateFirstReceiveTimestamp?: string } | undefined,
  now: number = Date.now(),
): number | undefined => {
  const wanted = Math.max(1, Math.ceil(visibleAfterMs / 1000));
  const firstReceive = Number(attributes?.ApproximateFirstReceiveTimestamp);
  const inFlight = Number.isFinite(firstReceive) && firstReceive > 0 ? Math.max(0, now - firstReceive) : 0;
  const left = MAX_VISIBILITY_SECONDS - Math.ceil(inFlight / 1000) - VISIBILITY_CLOCK_SLACK_SECONDS;
  if (left < 1) return undefined;
  return Math.min(wanted, left);
};

/** The message has been in flight for (nearly) 12 hours: SQS would reject any further extension. */
export class VisibilityExhaustedError extends Error {
  constructor(messageId: string) {
    super(
      `message ${messageId} has been in flight for nearly 12 hours since its first receive: SQS allows no further visibility extension, it returns after the queue's timeout`,
    );
    this.name = 'VisibilityExhaustedError';
  }
}
