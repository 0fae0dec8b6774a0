import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';

/**
 * The dead-letter queue's depth on the overview. Its own module, loaded with the SQS client on the first
 * read (lib/console/wiring.ts): lib/console/adapters.ts is on the console's module path.
 */
export const sqsQueueDepth = (sqs: SQSClient, queueUrl: string) => async (): Promise<number> => {
  const out = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(out.Attributes?.ApproximateNumberOfMessages ?? 0);
};
