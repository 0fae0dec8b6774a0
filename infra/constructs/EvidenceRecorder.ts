import { Duration, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventTargets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as lambdaEventSources from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as ses from 'aws-cdk-lib/aws-ses';
import * as smsvoice from 'aws-cdk-lib/aws-smsvoice';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as snsSubscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lib/config.js';
import { acknowledge } from '../nag.js';
import { SendproofFunction } from './SendproofFunction.js';

export interface EvidenceRecorderProps {
  /** Key for the SMS events topic; its policy must let sms-voice.amazonaws.com use it. */
  topicKey: kms.IKey;
  /**
   * SES: the configuration set to attach an EventBridge destination to. Absent: email events are not wired
   * (a non-SES email transport).
   */
  sesConfigurationSetName?: string;
  /** SMS: create an End User Messaging SMS configuration set whose events go to the SNS topic. */
  smsEvents: boolean;
  logRetention?: logs.RetentionDays;
}

/** SES v2 event types the recorder turns into evidence (EventBridge detail-type values). */
export const SES_EVIDENCE_DETAIL_TYPES = [
  'Email Sent',
  'Email Delivered',
  'Email Bounced',
  'Email Complaint Received',
  'Email Rejected',
  'Email Delivery Delayed',
  'Email Rendering Failed',
];

/**
 * How the evidence function reads its queue: up to this many events per invocation, gathered for at
 * most the window (a delivered notification brings two or three events; one invocation records many).
 */
export const EVIDENCE_BATCH = { batchSize: 100, maxBatchingWindowSeconds: 5, maxReceiveCount: 5 } as const;

/**
 * Provider evidence in, ledger transitions out: SES v2 configuration-set events arrive through the default
 * EventBridge bus, AWS End User Messaging SMS events through an SNS topic; both are delivered to one SQS
 * queue, which the function reads in batches with partial batch responses (an event that fails is
 * retried alone, and after EVIDENCE_BATCH.maxReceiveCount receives lands on the DLQ). Events that cannot
 * be delivered to the queue land on the same encrypted DLQ instead of vanishing.
 */
export class EvidenceRecorder extends Construct {
  readonly function: SendproofFunction;
  readonly smsEventsTopic: sns.Topic;
  readonly dlq: sqs.Queue;
  /** EventBridge (SES) and SNS (SMS) deliver here; the evidence function reads it in batches. */
  readonly queue: sqs.Queue;
  readonly smsConfigurationSet?: smsvoice.CfnConfigurationSet;
  readonly sesRule?: events.Rule;
  /** Signed push evidence (Resend, Twilio, SendGrid): POST {url}/resend | /twilio | /sendgrid. */
  readonly webhook: SendproofFunction;
  readonly webhookUrl: lambda.FunctionUrl;
  /** JSON `{ resend?, twilio?, sendgrid? }`: the operator puts each provider's signing secret here. */
  readonly webhookSecret: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: EvidenceRecorderProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.function = new SendproofFunction(this, 'Evidence', {
      entry: 'functions/evidence/index.ts',
      description: 'Records SES and SMS delivery events as ledger evidence',
      timeout: Duration.seconds(30),
      logRetention: props.logRetention,
    });
    this.dlq = new sqs.Queue(this, 'UndeliveredEvents', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(
      this.dlq,
      'AwsSolutions-SQS3',
      'This queue is the dead-letter queue for undeliverable evidence events.',
    );
    // One queue for both sources. The visibility timeout covers six function timeouts (AWS's advice for
    // an SQS event source); an event the function reports failed comes back alone, then goes to the DLQ.
    this.queue = new sqs.Queue(this, 'Events', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(6 * 30),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.dlq, maxReceiveCount: EVIDENCE_BATCH.maxReceiveCount },
    });
    this.function.fn.addEventSource(
      new lambdaEventSources.SqsEventSource(this.queue, {
        batchSize: EVIDENCE_BATCH.batchSize,
        maxBatchingWindow: Duration.seconds(EVIDENCE_BATCH.maxBatchingWindowSeconds),
        reportBatchItemFailures: true,
      }),
    );

    // Signed push evidence. The Function URL has no IAM auth because providers cannot sign with SigV4:
    // every request is authenticated by the provider's own signature (lib/evidence/webhooks.ts), and an
    // unsigned, forged or replayed one is refused with 401 before anything is read or written.
    this.webhook = new SendproofFunction(this, 'Webhook', {
      entry: 'functions/webhook/index.ts',
      description: 'Verifies signed provider webhooks (Resend, Twilio, SendGrid) and records their evidence',
      timeout: Duration.seconds(15),
      logRetention: props.logRetention,
    });
    this.webhookSecret = new secretsmanager.Secret(this, 'WebhookSigningSecrets', {
      description: 'Sendproof webhook signing secrets: JSON { resend?, twilio?, sendgrid? }',
      secretObjectValue: {},
    });
    acknowledge(
      this.webhookSecret,
      'AwsSolutions-SMG4',
      'Provider signing secrets are issued and rotated by the providers; the operator updates the value.',
    );
    this.webhook.setEnv(ENV.webhookSecretArn, this.webhookSecret.secretArn);
    this.webhookSecret.grantRead(this.webhook.role);
    this.webhookUrl = this.webhook.fn.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE });

    // SMS events: End User Messaging SMS publishes to SNS; CloudFormation can declare the destination
    // (AWS::SMSVOICE::ConfigurationSet EventDestinations[].SnsDestination), so no manual step is needed.
    this.smsEventsTopic = new sns.Topic(this, 'SmsEvents', {
      masterKey: props.topicKey,
      enforceSSL: true,
    });
    this.smsEventsTopic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'SmsVoicePublishesEvents',
        principals: [new iam.ServicePrincipal('sms-voice.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.smsEventsTopic.topicArn],
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
    );
    this.smsEventsTopic.addSubscription(
      new snsSubscriptions.SqsSubscription(this.queue, { deadLetterQueue: this.dlq }),
    );
    if (props.smsEvents) {
      this.smsConfigurationSet = new smsvoice.CfnConfigurationSet(this, 'SmsConfigurationSet', {
        eventDestinations: [
          {
            eventDestinationName: 'sendproof-evidence',
            enabled: true,
            matchingEventTypes: ['TEXT_ALL'],
            snsDestination: { topicArn: this.smsEventsTopic.topicArn },
          },
        ],
      });
      // The topic policy must exist before SMS validates the destination.
      const policy = this.smsEventsTopic.node.tryFindChild('Policy');
      if (policy) this.smsConfigurationSet.node.addDependency(policy);
    }

    if (props.sesConfigurationSetName) {
      new ses.ConfigurationSetEventDestination(this, 'SesToEventBridge', {
        configurationSet: ses.ConfigurationSet.fromConfigurationSetName(
          this,
          'SesConfigurationSet',
          props.sesConfigurationSetName,
        ),
        destination: ses.EventDestination.eventBus(
          events.EventBus.fromEventBusName(this, 'DefaultBus', 'default'),
        ),
        events: [
          ses.EmailSendingEvent.SEND,
          ses.EmailSendingEvent.DELIVERY,
          ses.EmailSendingEvent.BOUNCE,
          ses.EmailSendingEvent.COMPLAINT,
          ses.EmailSendingEvent.REJECT,
          ses.EmailSendingEvent.DELIVERY_DELAY,
          ses.EmailSendingEvent.RENDERING_FAILURE,
        ],
      });
      this.sesRule = new events.Rule(this, 'SesEvents', {
        description: 'SES v2 events of the Sendproof configuration set',
        eventPattern: {
          source: ['aws.ses'],
          detailType: SES_EVIDENCE_DETAIL_TYPES,
          detail: { mail: { tags: { 'ses:configuration-set': [props.sesConfigurationSetName] } } },
        },
        targets: [
          new eventTargets.SqsQueue(this.queue, {
            deadLetterQueue: this.dlq,
            retryAttempts: 8,
            maxEventAge: Duration.hours(6),
          }),
        ],
      });
    }
  }
}
