import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** The SQS call behind "come back when due": one ChangeMessageVisibility per parked message. */
export const visibilityChanger =
  (sqs: SQSClient, queueUrl: string) =>
  async (receiptHandle: string, seconds: number): Promise<void> => {
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  };
