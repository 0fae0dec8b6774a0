import { App, Stack } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { appConfigFromContext, CONTEXT } from '../../infra/appConfig.js';
import { NotificationLedger, type NotificationLedgerProps } from '../../infra/NotificationLedger.js';
import type { CommandRecord } from '../../lib/aws/commandLog.js';
import { ENV, loadConfig } from '../../lib/config.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { providerChainsFor } from '../../lib/transports/configured.js';
import { CIRCUIT_METRIC } from '../../lib/transports/health.js';
import {
  actionsFor,
  allowingStatements,
  type DeployedFunction,
  denyingStatements,
  expectedResource,
  type PolicyStatement,
} from './iamPolicy.js';
import { SES_AND_SMS, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:sendproof-providers-AbCdEf';

const failoverProps = (scope: never): NotificationLedgerProps => ({
  ...SES_AND_SMS,
  email: { ...SES_AND_SMS.email, failover: ['sendgrid'] },
  sms: { ...SES_AND_SMS.sms, failover: ['twilio'], senderId: '+15555550100' },
  providerSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, 'Provider', SECRET_ARN),
  providerCircuit: { failures: 3, openSeconds: 120 },
});

describe('failover providers in the CDK app (issue 29)', () => {
  const { stack, template } = synthStack(failoverProps as never);
  /** The stream reads of the event source mapping (its own statements, on the stream ARN). */
  const STREAM_ACTIONS = [
    'dynamodb:ListStreams',
    'dynamodb:DescribeStream',
    'dynamodb:GetRecords',
    'dynamodb:GetShardIterator',
  ];
  /** The DynamoDB item statements of a function's role (its policies in the template). */
  const dynamoStatementsOf = (fn: typeof stack.ledger.dispatcher.function) => {
    const roleId = stack.getLogicalId(fn.role.node.defaultChild as never);
    return Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
      .flatMap((p) => p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[] }>)
      .filter((st) =>
        [st.Action].flat().some((a) => a.startsWith('dynamodb:') && !STREAM_ACTIONS.includes(a)),
      );
  };
  const envOf = (fn: typeof stack.ledger.dispatcher.function): Record<string, unknown> =>
    template.toJSON().Resources[stack.getLogicalId(fn.fn.node.defaultChild as never)].Properties.Environment
      .Variables;

  it(
    'gives the dispatcher and the reconciler the ordered lists and the circuit settings, and both build the chains',
    () => {
      // Assess
      const dispatch = envOf(stack.ledger.dispatcher.function);
      const reconcile = envOf(stack.ledger.reconciler.function);
      for (const env of [dispatch, reconcile]) {
        expect(env[ENV.emailProviders]).toBe('ses,sendgrid');
        expect(env[ENV.smsProviders]).toBe('sms-v2,twilio');
      }
      expect(JSON.parse(dispatch[ENV.providerCircuit] as string)).toEqual({
        failures: 3,
        windowSeconds: 60,
        openSeconds: 120,
        cacheMs: 1000,
        reportLagSeconds: 600,
        reportWindowSeconds: 1800,
        reportMinSample: 20,
        reportLateShare: 0.5,
      });
      // The reconcile run judges the report counters with the same settings.
      expect(reconcile[ENV.providerCircuit]).toBe(dispatch[ENV.providerCircuit]);
      const config = loadConfig({
        [ENV.emailProviders]: dispatch[ENV.emailProviders] as string,
        [ENV.smsProviders]: dispatch[ENV.smsProviders] as string,
        [ENV.smsOriginationIdentity]: dispatch[ENV.smsOriginationIdentity] as string,
        [ENV.providerSecretArn]: SECRET_ARN,
      });
      const chains = providerChainsFor(config);
      expect(chains.email.map((t) => t.name)).toEqual(['ses', 'sendgrid']);
      expect(chains.sms.map((t) => t.name)).toEqual(['sms-v2', 'twilio']);
    },
    SYNTH_TIMEOUT,
  );

  it('alarms on each provider circuit opening and on each failover from a provider', () => {
    // Assess
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
    for (const provider of ['ses', 'sendgrid', 'sms-v2', 'twilio'])
      for (const metric of [CIRCUIT_METRIC.opened, CIRCUIT_METRIC.failovers]) {
        const matching = alarms.filter(
          (a) =>
            a.MetricName === metric &&
            JSON.stringify(a.Dimensions) ===
              JSON.stringify([
                { Name: 'provider', Value: provider },
                { Name: 'service', Value: SERVICE_NAME },
              ]),
        );
        expect(matching, `${metric} ${provider}`).toHaveLength(1);
        expect(matching[0]).toMatchObject({ Namespace: METRICS_NAMESPACE, Statistic: 'Sum', Threshold: 0 });
      }
  });

  it('lets the outcomes consumer update the delivery-report counters (reports#… items) and nothing else in the ledger', () => {
    // Assess: its environment names the table, the circuit settings and the lists (that it fails over).
    const outcomes = envOf(stack.ledger.outcomeEvents.function);
    expect(outcomes[ENV.ledgerTable]).toEqual({ Ref: expect.stringMatching(/Ledger/) });
    expect(outcomes[ENV.providerCircuit]).toBe(envOf(stack.ledger.dispatcher.function)[ENV.providerCircuit]);
    expect(outcomes[ENV.emailProviders]).toBe('ses,sendgrid');
    const statements = dynamoStatementsOf(stack.ledger.outcomeEvents.function);
    expect(statements).toEqual([
      {
        Sid: 'LedgerReportCounters',
        Effect: 'Allow',
        Action: 'dynamodb:UpdateItem',
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/Ledger/), 'Arn'] },
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['reports#*'] } },
      },
    ]);
  });

  it('allows the report commands as lib/aws/commandLog.ts records them (test/integration/dispatch/reportLag.test.ts), and no row write by the outcomes consumer', () => {
    // Prepare: the failover roles, as test/infra/iamCommands.test.ts reads them. That suite holds the
    // recorded commands to a stack with email failover; this one also says what the roles must refuse.
    const ctx = { region: 'eu-west-1', account: '111122223333' };
    const deployed = (name: string, fn: typeof stack.ledger.dispatcher.function): DeployedFunction => {
      const roleId = stack.getLogicalId(fn.role.node.defaultChild as never);
      return {
        name,
        statements: Object.values(template.findResources('AWS::IAM::Policy'))
          .filter((p) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
          .flatMap((p) => p.Properties.PolicyDocument.Statement as PolicyStatement[]),
        env: envOf(fn),
        eventSourceArns: [],
      };
    };
    const outcomes = deployed('outcomes', stack.ledger.outcomeEvents.function);
    const reconcile = deployed('reconcile', stack.ledger.reconciler.function);
    const item = (fn: string, command: string, keyPrefix: string): CommandRecord => ({
      function: fn,
      service: 'dynamodb',
      command,
      resources: [{ kind: 'table', name: 'ledger-t', setting: 'ledgerTable', keyPrefix }],
    });
    const allowed = (fn: DeployedFunction, record: CommandRecord) =>
      actionsFor(record)!.every((action) => {
        const expected = expectedResource(record, record.resources[0]!, fn, ctx);
        return (
          !expected.problem &&
          allowingStatements(fn.statements, action, expected, ctx).length > 0 &&
          denyingStatements(fn.statements, action, expected, ctx).length === 0
        );
      });
    // Assess: the consumer adds to counters; the judgement reads counters and circuits and opens one.
    expect(allowed(outcomes, item('outcomes', 'UpdateItem', 'reports#…'))).toBe(true);
    for (const record of [
      item('reconcile', 'GetItem', 'reports#…'),
      item('reconcile', 'GetItem', 'health#…'),
      item('reconcile', 'UpdateItem', 'health#…'),
    ])
      expect(allowed(reconcile, record), record.command).toBe(true);
    // Not a row, a circuit, nor a read.
    expect(allowed(outcomes, item('outcomes', 'UpdateItem', ''))).toBe(false);
    expect(allowed(outcomes, item('outcomes', 'UpdateItem', 'health#…'))).toBe(false);
    expect(allowed(outcomes, item('outcomes', 'GetItem', 'reports#…'))).toBe(false);
  });

  it(
    'without failover the outcomes consumer gets no ledger access and keeps no counters',
    () => {
      // Prepare
      const plain = synthStack(SES_AND_SMS);
      const env = plain.template.toJSON().Resources[
        plain.stack.getLogicalId(plain.stack.ledger.outcomeEvents.function.fn.node.defaultChild as never)
      ].Properties.Environment.Variables as Record<string, unknown>;
      // Assess
      expect(env[ENV.ledgerTable]).toBeUndefined();
      expect(JSON.stringify(plain.template.findResources('AWS::IAM::Policy'))).not.toContain(
        'LedgerReportCounters',
      );
    },
    SYNTH_TIMEOUT,
  );

  it('binds each listed provider: SES sending as well as SendGrid, End User Messaging SMS as well as Twilio', () => {
    // Assess: SES sends only through the identity; the SMS configuration set exists for sms-v2.
    const policies = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    expect(policies).toContain('ses:SendEmail');
    expect(policies).toContain('sms-voice:SendTextMessage');
    expect(Object.keys(template.findResources('AWS::SMSVOICE::ConfigurationSet'))).toHaveLength(1);
    expect(JSON.stringify(template.toJSON().Outputs)).toContain('SendGridEventWebhookUrl');
  });

  it('refuses a provider listed twice and requires what each listed provider needs', () => {
    // Prepare
    const build = (props: NotificationLedgerProps) => () =>
      new NotificationLedger(new Stack(new App()), 'Another', props);
    // Assess
    expect(build({ ...SES_AND_SMS, email: { ...SES_AND_SMS.email, failover: ['ses'] } })).toThrow(
      /email.failover must not repeat a provider/,
    );
    expect(build({ ...SES_AND_SMS, email: { ...SES_AND_SMS.email, failover: ['sendgrid'] } })).toThrow(
      /providerSecret is required: email uses the sendgrid transport/,
    );
  });

  it('reads the failover lists and the circuit from app context', () => {
    // Act
    const config = appConfigFromContext((key) =>
      key === CONTEXT.email
        ? '{"transport":"ses","failover":["sendgrid"],"fromAddress":"a@example.com","sesIdentity":"example.com"}'
        : key === CONTEXT.providerCircuit
          ? '{"failures":4}'
          : undefined,
    );
    // Assess
    const props = config.ledger(new Stack(new App()));
    expect(props.email.failover).toEqual(['sendgrid']);
    expect(props.providerCircuit).toMatchObject({ failures: 4, windowSeconds: 60 });
  });
});
