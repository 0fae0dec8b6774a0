// A platform team's own CDK app (plain JavaScript, `node app.mjs`), with Sendproof inside its own stack.
import { App, CfnOutput, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sns from 'aws-cdk-lib/aws-sns';
import { NotificationLedger } from 'sendproof/construct';
import { ORDER_SHIPPED } from './purposes.mjs';

const app = new App();
const stack = new Stack(app, 'ShopNotifications', {
  env: { account: '444455556666', region: 'eu-central-1' },
});
const onCall = new sns.Topic(stack, 'OnCall', { enforceSSL: true });

const ledger = new NotificationLedger(stack, 'Notifications', {
  email: { transport: 'ses', fromAddress: 'orders@shop.example.org', sesIdentity: 'shop.example.org' },
  sms: {
    transport: 'sms-v2',
    originationIdentityArn: 'arn:aws:sms-voice:eu-central-1:444455556666:pool/pool-0a1b2c3d4e5f',
  },
  purposes: [ORDER_SHIPPED],
  templatesDir: 'templates',
  alarmTopic: onCall,
  archiveRetentionDays: 730,
  concurrency: { dispatcherMaxConcurrency: 4 },
});

// The team's own order service may publish intents (sqs:SendMessage on the intake queue, nothing else).
const orderService = new iam.Role(stack, 'OrderService', {
  assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
});
ledger.intake.queue.grantSendMessages(orderService);
new CfnOutput(stack, 'NotificationsQueueUrl', { value: ledger.intake.queue.queueUrl });

app.synth();
