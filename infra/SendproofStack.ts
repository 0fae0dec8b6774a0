import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { emailProvidersOf, NotificationLedger, type NotificationLedgerProps } from './NotificationLedger.js';

export interface SendproofStackProps extends StackProps {
  /** The construct's props, or a function that builds them in the stack's scope (imported resources). */
  ledger: NotificationLedgerProps | ((scope: Construct) => NotificationLedgerProps);
}

/** The standalone deployment: one NotificationLedger and the outputs a user needs to publish and query. */
export class SendproofStack extends Stack {
  readonly ledger: NotificationLedger;

  constructor(scope: Construct, id: string, props: SendproofStackProps) {
    super(scope, id, props);
    const ledgerProps = typeof props.ledger === 'function' ? props.ledger(this) : props.ledger;
    this.ledger = new NotificationLedger(this, 'Ledger', ledgerProps);
    const { intake, tables, archive, reconciler, evidence } = this.ledger;
    const output = (id: string, value: string, description: string) =>
      new CfnOutput(this, id, { value, description });
    output('IntakeQueueUrl', intake.queue.queueUrl, 'Publish intents here (SQS SendMessage)');
    output('IntakeQueueArn', intake.queue.queueArn, 'Grant producers sqs:SendMessage on this ARN');
    output('IntakeDlqUrl', intake.dlq.queueUrl, 'Intents the dispatcher could not place');
    output('LedgerTableName', tables.ledger.tableName, 'The delivery-claim ledger');
    output('ArchiveBucketName', archive.bucket.bucketName, 'Object Lock archive of every transition');
    output('AthenaWorkGroup', archive.workGroup.ref, 'Run the named audit queries in this workgroup');
    output('GlueDatabase', archive.database.ref, 'Glue database holding the transitions table');
    output('ReconcileStateMachineArn', reconciler.stateMachine.stateMachineArn, 'Reconcile workflow');
    output('SmsEventsTopicArn', evidence.smsEventsTopic.topicArn, 'End User Messaging SMS events topic');
    output('WebhookUrl', evidence.webhookUrl.url, 'Evidence endpoint: POST /resend, /twilio, /sendgrid');
    output('WebhookSecretArn', evidence.webhookSecret.secretArn, 'Webhook signing secrets (JSON)');
    output('AlarmTopicArn', this.ledger.alarmTopic.topicArn, 'Subscribe on-call to this topic');
    if (this.ledger.console) {
      const c = this.ledger.console;
      output('ConsoleUrl', `https://${c.distribution.distributionDomainName}/`, 'Operator console page');
      output('ConsoleApiUrl', c.api.apiEndpoint, 'Operator console API (Cognito JWT)');
      output('ConsoleUserPoolId', c.userPool.userPoolId, 'Add console users and groups here');
      output('ConsolePageBucket', c.bucket.bucketName, 'sendproof console publish-page uploads here');
      output('ConsoleClientId', c.userPoolClient.userPoolClientId, 'The page app client (hosted UI)');
      output('ConsoleHostedUiDomain', c.hostedUiDomain, 'Cognito hosted UI domain');
    }
    if (emailProvidersOf(ledgerProps).includes('sendgrid')) {
      // SendGrid's Event Webhook (Settings → Mail Settings → Event Webhook, signed) posts here; its
      // verification key goes into the webhook secret as `sendgrid`.
      output('SendGridEventWebhookUrl', `${evidence.webhookUrl.url}sendgrid`, 'SendGrid Event Webhook URL');
    }
    if (this.ledger.sesConfigurationSetName) {
      output('SesConfigurationSetName', this.ledger.sesConfigurationSetName, 'SES v2 configuration set');
    }
    if (evidence.smsConfigurationSet) {
      output('SmsConfigurationSetName', evidence.smsConfigurationSet.ref, 'SMS configuration set');
    }
  }
}
