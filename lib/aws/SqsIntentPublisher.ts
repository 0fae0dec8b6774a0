import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { SendproofError } from '../domain/errors.js';
import type { IntentPublisher } from '../reconcile/OperatorDecisions.js';

/** The SQS adapter of the intent publisher port: publishes an intent to the intake queue (the client comes from lib/aws/clients.ts). */
export class SqsIntentPublisher implements IntentPublisher {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async publish(body: string): Promise<{ messageId: string }> {
    const out = await this.client.send(
      new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: body }),
    );
    if (!out.MessageId)
      throw new SendproofError(
        'ambiguous',
        'publish_unconfirmed',
        'the queue accepted the intent without a message id',
      );
    return { messageId: out.MessageId };
  }
}
