import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { INTAKE_QUEUE } from '../queueDefinition.js';
import { localLambdaContext } from './lambdaContext.js';

/** The Lambda handler's shape: it may answer with batch item failures, or with nothing (all succeeded). */
export type SqsBatchHandler = (
  event: SQSEvent,
  context: Context,
) => Promise<SQSBatchResponse | undefined> | Promise<void>;

export interface SqsPollerOptions {
  sqs: SQSClient;
  queueUrl: string;
  handler: SqsBatchHandler;
  region: string;
  functionName: string;
  batchSize?: number;
  /** Parallel receive loops, like the event source mapping's concurrent batches. */
  pollers?: number;
  onError?: (error: unknown) => void;
}

const toRecord = (message: Message, queueArn: string, region: string): SQSRecord => ({
  messageId: message.MessageId!,
  receiptHandle: message.ReceiptHandle!,
  body: message.Body ?? '',
  attributes: {
    ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? '1',
    SentTimestamp: message.Attributes?.SentTimestamp ?? String(Date.now()),
    SenderId: message.Attributes?.SenderId ?? 'local',
    ApproximateFirstReceiveTimestamp:
      message.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
  },
  messageAttributes: {},
  md5OfBody: message.MD5OfBody ?? '',
  eventSource: 'aws:sqs',
  eventSourceARN: queueArn,
  awsRegion: region,
});

/**
 * Behaves like the Lambda SQS event source mapping with ReportBatchItemFailures: receive up to 10,
 * invoke the handler, delete what succeeded, and leave the reported failures to reappear after the
 * visibility timeout (the queue's redrive policy moves them to the DLQ after maxReceiveCount).
 * A handler that throws fails the whole batch, as in Lambda.
 */
export class SqsPoller {
  private running = false;
  private loops: Promise<void>[] = [];
  private queueArn = '';

  constructor(private readonly options: SqsPollerOptions) {}

  async start(): Promise<void> {
    const attributes = await this.options.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: this.options.queueUrl, AttributeNames: ['QueueArn'] }),
    );
    this.queueArn = attributes.Attributes?.QueueArn ?? this.options.queueUrl;
    this.running = true;
    this.loops = Array.from({ length: this.options.pollers ?? 1 }, () => this.loop());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        await this.pollOnce();
      } catch (error) {
        this.options.onError?.(error);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** One receive → invoke → delete cycle. Returns how many messages it received. */
  async pollOnce(): Promise<number> {
    const received = await this.options.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.options.queueUrl,
        MaxNumberOfMessages: this.options.batchSize ?? INTAKE_QUEUE.batchSize,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const messages = received.Messages ?? [];
    if (messages.length === 0) return 0;
    const event: SQSEvent = { Records: messages.map((m) => toRecord(m, this.queueArn, this.options.region)) };
    let failed = new Set(messages.map((m) => m.MessageId!));
    try {
      const response = await this.options.handler(
        event,
        localLambdaContext(this.options.functionName, this.options.region),
      );
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (error) {
      this.options.onError?.(error);
    }
    const done = messages.filter((m) => !failed.has(m.MessageId!));
    if (done.length > 0) {
      const out = await this.options.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.options.queueUrl,
          Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
      if (out.Failed?.length) this.options.onError?.(new Error(`${out.Failed.length} deletes failed`));
    }
    return messages.length;
  }
}
