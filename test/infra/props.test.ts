import { App, Stack } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { NotificationLedger, type NotificationLedgerProps } from '../../infra/NotificationLedger.js';
import { ENV } from '../../lib/config.js';
import { BUILT_IN_PURPOSES } from '../../lib/domain/purposes.js';
import { allowing, SES_AND_SMS, statementsOf, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;
const PROVIDER_SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:sendproof/providers-AbCdEf';

const construct = (props: NotificationLedgerProps) => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Host');
  return () => new NotificationLedger(stack, 'Ledger', props);
};

describe('NotificationLedger props', () => {
  it('refuses SES without a verified identity', () => {
    // Act
    const build = construct({ ...SES_AND_SMS, email: { transport: 'ses', fromAddress: 'a@example.com' } });
    // Assess
    expect(build).toThrow(/email.sesIdentity is required/);
  });

  it('refuses a third-party transport without a provider secret', () => {
    // Act
    const build = construct({ ...SES_AND_SMS, sms: { transport: 'twilio' } });
    // Assess
    expect(build).toThrow(/providerSecret is required: sms uses the twilio transport/);
  });

  it('refuses the SendGrid transport without a provider secret (its API key lives there)', () => {
    // Act
    const build = construct({
      ...SES_AND_SMS,
      email: { transport: 'sendgrid', fromAddress: 'a@example.com' },
    });
    // Assess
    expect(build).toThrow(/providerSecret is required: email uses the sendgrid transport/);
  });

  it('refuses the simulator transport without the base URL of the simulator', () => {
    // Act
    const build = construct({ ...SES_AND_SMS, sms: { transport: 'simulator' } });
    // Assess
    expect(build).toThrow(/restBaseUrl is required with the rest and simulator transports/);
  });

  it('refuses an SMS v2 transport without an origination identity', () => {
    // Act
    const build = construct({ ...SES_AND_SMS, sms: { transport: 'sms-v2' } });
    // Assess
    expect(build).toThrow(/originationIdentityArn is required/);
  });

  it('refuses an invalid purpose policy at synth instead of at the first cold start', () => {
    // Act
    const build = construct({
      ...SES_AND_SMS,
      purposes: [{ ...BUILT_IN_PURPOSES[0]!, purpose: 'Not Valid', maxAttempts: 0 }],
    });
    // Assess
    expect(build).toThrow(/purpose policy #0 is invalid/);
  });

  it('refuses a DLQ that parks intents after fewer than five receives', () => {
    // Act
    const build = construct({ ...SES_AND_SMS, maxReceiveCount: 3 });
    // Assess
    expect(build).toThrow(/maxReceiveCount must be at least 5/);
  });
});

describe('NotificationLedger with Resend, Twilio, a provider secret, attachments and an alarm topic', () => {
  let synth: ReturnType<typeof synthStack>;
  let alarmTopicArn: string;

  beforeAll(() => {
    // Prepare
    synth = synthStack((scope) => {
      const topic = sns.Topic.fromTopicArn(scope, 'OnCall', 'arn:aws:sns:eu-west-1:111122223333:on-call');
      alarmTopicArn = topic.topicArn;
      return {
        email: { transport: 'resend', fromAddress: 'no-reply@example.com' },
        sms: { transport: 'twilio', senderId: '+15555550100' },
        providerSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, 'Provider', PROVIDER_SECRET_ARN),
        purposes: [{ ...BUILT_IN_PURPOSES[1]!, purpose: 'invoice', policyVersion: 'invoice/1' }],
        alarmTopic: topic,
        attachments: {
          bucket: s3.Bucket.fromBucketName(scope, 'Attachments', 'acme-attachments'),
          prefix: 'out/',
        },
        concurrency: { dispatcherMaxConcurrency: 25, recordConcurrency: 8 },
      };
    });
  }, SYNTH_TIMEOUT);

  it('sends alarms to the given topic and creates no topic of its own for them', () => {
    // Assess
    const alarms = synth.template.findResources('AWS::CloudWatch::Alarm');
    const composites = Object.values(synth.template.findResources('AWS::CloudWatch::CompositeAlarm'));
    expect(Object.keys(alarms).length).toBeGreaterThan(0);
    // A burn-rate window alarm acts through its composite (both windows must burn); every other alarm, and
    // every composite, sends to the topic.
    const rules = JSON.stringify(composites.map((c) => c.Properties.AlarmRule));
    for (const [id, alarm] of Object.entries(alarms))
      if (alarm.Properties.AlarmActions === undefined) expect(rules, id).toContain(id);
      else expect(alarm.Properties.AlarmActions).toEqual([alarmTopicArn]);
    for (const composite of composites) expect(composite.Properties.AlarmActions).toEqual([alarmTopicArn]);
    // Only the SMS events topic remains.
    synth.template.resourceCountIs('AWS::SNS::Topic', 1);
  });

  it('creates no SES or SMS resources and grants no SES or SMS action when neither is used', () => {
    // Prepare
    const statements = statementsOf(synth.stack, synth.template, synth.stack.ledger.dispatcher.function.role);
    // Assess
    synth.template.resourceCountIs('AWS::SES::ConfigurationSet', 0);
    synth.template.resourceCountIs('AWS::SMSVOICE::ConfigurationSet', 0);
    synth.template.resourceCountIs('AWS::Events::Rule', 0);
    expect(allowing(statements, 'ses:SendEmail')).toEqual([]);
    expect(allowing(statements, 'sms-voice:SendTextMessage')).toEqual([]);
  });

  it('passes the provider secret by ARN with a read grant on exactly that secret, never as a value', () => {
    // Prepare
    const { ledger } = synth.stack;
    const fnId = synth.stack.getLogicalId(ledger.dispatcher.function.fn.node.defaultChild as never);
    const env = synth.template.toJSON().Resources[fnId].Properties.Environment.Variables;
    const statements = statementsOf(synth.stack, synth.template, ledger.dispatcher.function.role);
    // Assess
    expect(env[ENV.providerSecretArn]).toBe(PROVIDER_SECRET_ARN);
    expect(allowing(statements, 'secretsmanager:GetSecretValue').map((s) => s.Resource)).toContainEqual(
      PROVIDER_SECRET_ARN,
    );
    expect(JSON.parse(env[ENV.purposes])).toEqual([expect.objectContaining({ purpose: 'invoice' })]);
    expect(env[ENV.recordConcurrency]).toBe('8');
  });

  it('lets the reconciler read the provider secret for lookups and the content-hash key to open the labels of pulled events', () => {
    // Prepare
    const statements = statementsOf(synth.stack, synth.template, synth.stack.ledger.reconciler.function.role);
    // Assess: pulled evidence is authenticated like pushed evidence (lib/evidence/labelAuth.ts)
    expect(allowing(statements, 'secretsmanager:GetSecretValue').map((s) => s.Resource)).toEqual([
      { Ref: expect.stringMatching(/^LedgerContentHashKey/) },
      PROVIDER_SECRET_ARN,
    ]);
  });

  it('lets the dispatcher read attachments under the configured prefix only', () => {
    // Prepare
    const statements = statementsOf(synth.stack, synth.template, synth.stack.ledger.dispatcher.function.role);
    // Assess
    const reads = allowing(statements, 's3:GetObject');
    expect(reads).toHaveLength(1);
    expect(JSON.stringify(reads[0]?.Resource)).toContain(':s3:::acme-attachments/out/*');
    expect(reads[0]?.Action).toEqual(['s3:GetObject']);
  });

  it('caps the dispatcher event source at the configured concurrency', () => {
    // Assess
    synth.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 25 },
    });
  });
});

describe('NotificationLedger with SendGrid email', () => {
  let synth: ReturnType<typeof synthStack>;
  beforeAll(() => {
    // Prepare
    synth = synthStack((scope) => ({
      ...SES_AND_SMS,
      email: { transport: 'sendgrid', fromAddress: 'no-reply@example.com' },
      providerSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, 'Provider', PROVIDER_SECRET_ARN),
    }));
  }, SYNTH_TIMEOUT);
  const envOf = (fn: { fn: { node: { defaultChild?: unknown } } }) =>
    synth.template.toJSON().Resources[synth.stack.getLogicalId(fn.fn.node.defaultChild as never)].Properties
      .Environment.Variables as Record<string, unknown>;

  it('sends with the API key from the provider secret (by ARN, read grant on it) and sends nothing through SES', () => {
    // Prepare
    const { ledger } = synth.stack;
    const statements = statementsOf(synth.stack, synth.template, ledger.dispatcher.function.role);
    // Assess
    expect(envOf(ledger.dispatcher.function)).toMatchObject({
      [ENV.emailTransport]: 'sendgrid',
      [ENV.providerSecretArn]: PROVIDER_SECRET_ARN,
    });
    expect(allowing(statements, 'secretsmanager:GetSecretValue').map((s) => s.Resource)).toContainEqual(
      PROVIDER_SECRET_ARN,
    );
    expect(allowing(statements, 'ses:SendEmail')).toEqual([]);
    synth.template.resourceCountIs('AWS::SES::ConfigurationSet', 0);
  });

  it("verifies SendGrid's signed Event Webhook with the key in the webhook secret, and outputs the URL to configure", () => {
    // Prepare
    const { evidence } = synth.stack.ledger;
    const secretId = synth.stack.getLogicalId(evidence.webhookSecret.node.defaultChild as never);
    const statements = statementsOf(synth.stack, synth.template, evidence.webhook.role);
    const outputs = synth.template.toJSON().Outputs as Record<string, { Value: unknown }>;
    // Assess
    expect(envOf(evidence.webhook)[ENV.webhookSecretArn]).toEqual({ Ref: secretId });
    expect(allowing(statements, 'secretsmanager:GetSecretValue').map((s) => s.Resource)).toContainEqual({
      Ref: secretId,
    });
    expect(JSON.stringify(outputs.SendGridEventWebhookUrl?.Value)).toContain('sendgrid');
  });
});
