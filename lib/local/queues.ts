import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { INTAKE_QUEUE } from '../queueDefinition.js';
import { freePort } from './ports.js';

/**
 * LOCAL ONLY. The SQS side of the local stack, shared by `npm start` (lib/local/LocalStack.ts), the
 * benchmark (bench/) and the tests, so all three run the same queues on the same emulator.
 */

export interface RunningFauxqs {
  /** http://127.0.0.1:<port>: SQS and S3 on one endpoint. */
  endpoint: string;
  stop(): Promise<void>;
}

/** Starts fauxqs (SQS + S3 emulator) on a free loopback port. Imported on demand: a dev-time server. */
export const startFauxqs = async (): Promise<RunningFauxqs> => {
  const { buildApp } = await import('fauxqs');
  const app = buildApp({ logger: false });
  const port = await freePort();
  await app.listen({ port, host: '127.0.0.1' });
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => app.close() };
};

export interface IntakeQueueOptions {
  name: string;
  /** Default `<name>-dlq`. */
  dlqName?: string;
  visibilityTimeoutSeconds: number;
  /** Set the intake and DLQ retention periods of lib/queueDefinition.ts (the emulator's default otherwise). */
  retention?: boolean;
}

/**
 * An intake queue with the production redrive policy (a DLQ, INTAKE_QUEUE.maxReceiveCount receives) and
 * the given visibility timeout. Returns both queue URLs.
 */
export const createIntakeQueue = async (
  sqs: SQSClient,
  options: IntakeQueueOptions,
): Promise<{ queueUrl: string; dlqUrl: string }> => {
  const dlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: options.dlqName ?? `${options.name}-dlq`,
      ...(options.retention
        ? { Attributes: { MessageRetentionPeriod: String(INTAKE_QUEUE.retentionDays * 86_400) } }
        : {}),
    }),
  );
  const dlqArn = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl!, AttributeNames: ['QueueArn'] }))
  ).Attributes!.QueueArn!;
  const queue = await sqs.send(
    new CreateQueueCommand({
      QueueName: options.name,
      Attributes: {
        VisibilityTimeout: String(options.visibilityTimeoutSeconds),
        ...(options.retention
          ? { MessageRetentionPeriod: String(INTAKE_QUEUE.intakeRetentionDays * 86_400) }
          : {}),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: INTAKE_QUEUE.maxReceiveCount,
        }),
      },
    }),
  );
  return { queueUrl: queue.QueueUrl!, dlqUrl: dlq.QueueUrl! };
};

/** Messages still on a queue, visible or in flight (both approximate counts, as SQS reports them). */
export const queueDepth = async (sqs: SQSClient, queueUrl: string): Promise<number> => {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
};
