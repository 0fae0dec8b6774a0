import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { INTAKE_QUEUE } from '../../lib/queueDefinition.js';
import { acknowledge } from '../nag.js';

export interface IntakeQueueProps {
  /** The dispatcher's timeout: the queue's visibility timeout is derived from it. */
  dispatcherTimeout: Duration;
  /** Deliveries before an intent is parked on the DLQ (at least 5). */
  maxReceiveCount?: number;
}

/** Minimum deliveries before parking: fewer would dead-letter intents during an ordinary provider outage. */
export const MIN_RECEIVE_COUNT = INTAKE_QUEUE.maxReceiveCount;
/** AWS's guidance for Lambda event sources: visibility at least six times the function timeout. */
export const VISIBILITY_FACTOR = INTAKE_QUEUE.visibilityTimeoutMultiplier;

/**
 * Where users publish intents, and the DLQ that parks intents the dispatcher could not place.
 * Both queues are encrypted (SQS-managed SSE) and refuse non-TLS requests.
 */
export class IntakeQueue extends Construct {
  readonly queue: sqs.Queue;
  readonly dlq: sqs.Queue;

  constructor(scope: Construct, id: string, props: IntakeQueueProps) {
    super(scope, id);
    const maxReceiveCount = props.maxReceiveCount ?? MIN_RECEIVE_COUNT;
    if (maxReceiveCount < MIN_RECEIVE_COUNT) {
      throw new Error(`maxReceiveCount must be at least ${MIN_RECEIVE_COUNT}, got ${maxReceiveCount}`);
    }
    this.dlq = new sqs.Queue(this, 'Dlq', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(INTAKE_QUEUE.retentionDays),
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.queue = new sqs.Queue(this, 'Queue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(props.dispatcherTimeout.toSeconds() * VISIBILITY_FACTOR),
      retentionPeriod: Duration.days(INTAKE_QUEUE.intakeRetentionDays),
      deadLetterQueue: { queue: this.dlq, maxReceiveCount },
    });
    acknowledge(this.dlq, 'AwsSolutions-SQS3', 'This queue is the dead-letter queue of the intake queue.');
  }
}
