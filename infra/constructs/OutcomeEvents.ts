import { Duration, SecretValue } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lib/config.js';
import { OUTCOME_EVENT_SOURCE } from '../../lib/events/outcomeEvent.js';
import { acknowledge } from '../nag.js';
import { SendproofFunction } from './SendproofFunction.js';

/** A tenant's HTTPS endpoint that receives its outcome events (EventBridge API destination). */
export interface OutcomeEndpoint {
  /** Only this tenant's events go to the endpoint. */
  tenant: string;
  /** HTTPS URL; EventBridge POSTs each event's `detail` (the outcome event v1) as the JSON body. */
  url: string;
  /**
   * The header and the Secrets Manager secret (plain string) the endpoint authenticates with, e.g.
   * `{ header: 'x-api-key', secret }`. EventBridge keeps it in the connection's own secret.
   */
  apiKey: { header: string; secret: secretsmanager.ISecret };
  /** Most calls per second EventBridge makes to the endpoint. Default 20. */
  ratePerSecond?: number;
}

export interface OutcomeEventsProps {
  ledger: dynamodb.ITable;
  purposesJson: string;
  /** The bus to publish to; absent: the construct creates one. */
  eventBus?: events.IEventBus;
  endpoints?: readonly OutcomeEndpoint[];
  /**
   * How long the stream's event source gathers records before it invokes the outcomes function: a
   * caller hears of a transition within about this long (plus the stream's own sub-second delay).
   * Default 5 s (`OUTCOME_BATCHING`). At 10 million notifications a month a 1 s window means an
   * invocation for every 4 notifications (0.26 each); 5 s, one for every 19 (0.05). Each invocation is
   * billed, traced and logged, so a shorter window costs about $1 per million more at that volume (see
   * docs/cost.md). Whole seconds, 0 to 300 (Lambda's limit for a stream event source).
   */
  maxBatchingWindow?: Duration;
  logRetention?: logs.RetentionDays;
}

/**
 * The event source's defaults: up to 100 records, gathered for up to 5 s. An outcome event is
 * a notice, not a gate (nothing waits on it to send), so a few seconds is the better trade than an
 * invocation per second per shard whatever the traffic.
 */
export const OUTCOME_BATCHING = { batchSize: 100, maxBatchingWindowSeconds: 5 } as const;

/** The window the construct's props ask for, checked: whole seconds within Lambda's 0–300. */
export const outcomeBatchingWindowSeconds = (window: Duration | undefined): number => {
  if (window === undefined) return OUTCOME_BATCHING.maxBatchingWindowSeconds;
  const seconds = window.toSeconds({ integral: false });
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > 300)
    throw new Error(
      `OutcomeEvents: maxBatchingWindow must be whole seconds from 0 to 300 (a stream event source's limit), got ${seconds} s`,
    );
  return seconds;
};

/**
 * Outcome events for the calling service: the ledger stream → the outcomes function (lib/events) → an
 * EventBridge bus, where a caller subscribes with a rule; optionally, per tenant, a rule delivering to the
 * tenant's HTTPS endpoint through an API destination. Nothing is dropped silently: a stream batch the
 * function gives up on goes (as coordinates) to `streamFailures`, an event an endpoint refuses for a day
 * goes to `deadLetterQueue`; both are watched by the Alarms construct.
 *
 * Why a stream consumer and not EventBridge Pipes: a Pipe's input transformer maps fixed JSON paths of one
 * record, and its filter compares a field with constants. The mapping needs what neither can say: the
 * history entries a record added (new image's history from the old image's version on: one or more per
 * record), the delivery facts it added (by count, in a list), whether the version changed at all (a
 * lease renewal must say nothing), and a hash for a stable event id. So the function runs the archiver's
 * own derivation (lib/archive/transitions.ts) instead, as its own event source on the table (a stream
 * shard allows two readers: the archiver and this one) with a window of seconds (5 by default,
 * `maxBatchingWindow`) rather than the archive's 60 s.
 */
export class OutcomeEvents extends Construct {
  readonly bus: events.IEventBus;
  readonly function: SendproofFunction;
  readonly streamFailures: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly rules: events.Rule[] = [];

  constructor(scope: Construct, id: string, props: OutcomeEventsProps) {
    super(scope, id);
    this.bus =
      props.eventBus ?? new events.EventBus(this, 'Bus', { description: 'Sendproof outcome events' });

    this.function = new SendproofFunction(this, 'Outcomes', {
      entry: 'functions/outcomes/index.ts',
      description: 'Publishes outcome events (and SLO metrics) from the ledger stream to the event bus',
      timeout: Duration.minutes(1),
      logRetention: props.logRetention,
    })
      .setEnv(ENV.eventBusName, this.bus.eventBusName)
      .setEnv(ENV.purposes, props.purposesJson);
    this.bus.grantPutEventsTo(this.function.role);

    this.streamFailures = new sqs.Queue(this, 'FailedBatches', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(
      this.streamFailures,
      'AwsSolutions-SQS3',
      'This queue is the on-failure destination of the outcome-events stream mapping.',
    );
    this.function.fn.addEventSource(
      new DynamoEventSource(props.ledger, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: OUTCOME_BATCHING.batchSize,
        maxBatchingWindow: Duration.seconds(outcomeBatchingWindowSeconds(props.maxBatchingWindow)),
        bisectBatchOnError: true,
        retryAttempts: 10,
        maxRecordAge: Duration.hours(12),
        reportBatchItemFailures: true,
        // One batch per shard at a time: a caller hears one row's transitions in order.
        parallelizationFactor: 1,
        onFailure: new SqsDlq(this.streamFailures),
      }),
    );

    this.deadLetterQueue = new sqs.Queue(this, 'UndeliveredEvents', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(
      this.deadLetterQueue,
      'AwsSolutions-SQS3',
      'This queue is the dead-letter queue of the API destination targets (events an endpoint would not take).',
    );
    for (const [i, endpoint] of (props.endpoints ?? []).entries()) {
      const connection = new events.Connection(this, `Connection${i}`, {
        description: `Sendproof outcome events for tenant ${endpoint.tenant}`,
        authorization: events.Authorization.apiKey(
          endpoint.apiKey.header,
          SecretValue.secretsManager(endpoint.apiKey.secret.secretArn),
        ),
      });
      const destination = new events.ApiDestination(this, `Destination${i}`, {
        connection,
        endpoint: endpoint.url,
        httpMethod: events.HttpMethod.POST,
        rateLimitPerSecond: endpoint.ratePerSecond ?? 20,
        description: `Outcome events of tenant ${endpoint.tenant}`,
      });
      const rule = new events.Rule(this, `TenantRule${i}`, {
        eventBus: this.bus,
        description: `Outcome events of tenant ${endpoint.tenant} to its endpoint`,
        eventPattern: { source: [OUTCOME_EVENT_SOURCE], detail: { tenant: [endpoint.tenant] } },
      });
      // EventBridge retries 429 and 5xx answers (not other 4xx) for up to a day, then dead-letters.
      rule.addTarget(
        new targets.ApiDestination(destination, {
          event: events.RuleTargetInput.fromEventPath('$.detail'),
          deadLetterQueue: this.deadLetterQueue,
          retryAttempts: 185,
          maxEventAge: Duration.hours(24),
        }),
      );
      this.rules.push(rule);
    }
  }
}
