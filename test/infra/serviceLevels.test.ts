import { Duration } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { outcomeBatchingWindowSeconds } from '../../infra/constructs/OutcomeEvents.js';
import type { NotificationLedgerProps } from '../../infra/NotificationLedger.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { SLO_METRIC } from '../../lib/slo/metrics.js';
import { SES_AND_SMS, statementsOf, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;
const WITH_ENDPOINT = (scope: never): NotificationLedgerProps => ({
  ...SES_AND_SMS,
  purposes: [
    {
      purpose: 'order-shipped',
      policyVersion: 'order-shipped/1',
      templateRevisionInKey: false,
      expiryRequired: false,
      maxAttempts: 3,
      ambiguityDeadlineSeconds: 3600,
      defaultDelivery: 'all',
      attachments: 'forbidden',
      retentionDays: 60,
      cancellable: false,
      providerScheduling: false,
      slo: {
        accepted: { withinSeconds: 300, target: 0.995 },
        duplicates: { atMostOneIn: 10_000 },
        windowDays: 7,
      },
    },
  ],
  outcomeEvents: {
    // A caller that wants to hear within about a second pays an invocation per second per shard.
    maxBatchingWindow: Duration.seconds(1),
    endpoints: [
      {
        tenant: 'acme-games',
        url: 'https://hooks.acme.example/sendproof',
        apiKey: {
          header: 'x-api-key',
          secret: secretsmanager.Secret.fromSecretCompleteArn(
            scope,
            'AcmeHookKey',
            'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-hook-AbCdEf',
          ),
        },
      },
    ],
  },
});

describe('service level objectives and outcome events in AWS', () => {
  const { app, stack, template } = synthStack(WITH_ENDPOINT as never);

  it(
    'declares one Application Signals SLO per purpose and objective, request-based on the stream metrics, over the purpose window',
    () => {
      // Assess: 3 built-ins × (accepted, delivered, duplicates) + order-shipped (accepted, duplicates)
      const slos = Object.values(template.findResources('AWS::ApplicationSignals::ServiceLevelObjective'));
      expect(slos).toHaveLength(11);
      const receipt = slos.find((s) => String(s.Properties.Name).endsWith('-receipt-accepted'))!;
      expect(receipt.Properties.Goal).toEqual({
        AttainmentGoal: 99,
        WarningThreshold: 50,
        Interval: { RollingInterval: { Duration: 28, DurationUnit: 'DAY' } },
      });
      expect(receipt.Properties.BurnRateConfigurations).toEqual([
        { LookBackWindowMinutes: 60 },
        { LookBackWindowMinutes: 360 },
      ]);
      const sli = receipt.Properties.RequestBasedSli.RequestBasedSliMetric;
      const metricOf = (q: { MetricStat: { Metric: unknown } }) => q.MetricStat.Metric;
      expect(metricOf(sli.TotalRequestCountMetric[0])).toEqual({
        Namespace: METRICS_NAMESPACE,
        MetricName: SLO_METRIC.acceptanceDecided,
        Dimensions: [
          { Name: 'purpose', Value: 'receipt' },
          { Name: 'service', Value: SERVICE_NAME },
        ],
      });
      expect(metricOf(sli.MonitoredRequestCountMetric.GoodCountMetric[0])).toMatchObject({
        MetricName: SLO_METRIC.acceptanceGood,
      });
      const shipped = slos.find((s) => String(s.Properties.Name).endsWith('-order-shipped-duplicates'))!;
      expect(shipped.Properties.Goal).toMatchObject({
        AttainmentGoal: 99.99,
        Interval: { RollingInterval: { Duration: 7, DurationUnit: 'DAY' } },
      });
      expect(
        metricOf(
          shipped.Properties.RequestBasedSli.RequestBasedSliMetric.MonitoredRequestCountMetric
            .BadCountMetric[0],
        ),
      ).toMatchObject({ MetricName: SLO_METRIC.duplicateAcceptances });
      expect(slos.some((s) => String(s.Properties.Name).endsWith('-order-shipped-delivered'))).toBe(false);
    },
    SYNTH_TIMEOUT,
  );

  it('pages on multi-window burn rates: 1 h and 5 min above 13.44, 6 h and 30 min above 5.6 (28-day window)', () => {
    // Assess
    const composites = Object.values(template.findResources('AWS::CloudWatch::CompositeAlarm'));
    // accepted + delivered for 3 built-ins, accepted for order-shipped; fast and slow each
    expect(composites).toHaveLength(2 * 7);
    for (const c of composites)
      expect(c.Properties.AlarmActions).toEqual([{ Ref: expect.stringMatching(/AlarmTopic/) }]);
    const alarms = template.findResources('AWS::CloudWatch::Alarm');
    const component = (needle: string) =>
      Object.entries(alarms).find(([id]) => id.includes(needle.replace(/-/g, '')))![1].Properties;
    const fastLong = component('Burn-receipt-accepted-fast-long');
    expect(fastLong).toMatchObject({
      Threshold: 13.44,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(JSON.stringify(fastLong.Metrics)).toContain('"Period":3600');
    expect(fastLong.AlarmActions).toBeUndefined();
    expect(JSON.stringify(component('Burn-receipt-accepted-fast-short').Metrics)).toContain('"Period":300');
    expect(component('Burn-receipt-accepted-slow-long').Threshold).toBe(5.6);
    expect(JSON.stringify(component('Burn-receipt-accepted-slow-long').Metrics)).toContain('"Period":21600');
    // order-shipped's 7-day window scales the thresholds: 2 % of 168 h in 1 h, 5 % in 6 h
    expect(component('Burn-order-shipped-accepted-fast-long').Threshold).toBe(3.36);
    const duplicates = component('Duplicates-receipt');
    expect(JSON.stringify(duplicates.Metrics)).toContain('twice - audited / 100000');
    expect(duplicates.AlarmActions).toEqual([{ Ref: expect.stringMatching(/AlarmTopic/) }]);
  });

  it('shows the SLIs, the budget left and the instruments on one dashboard', () => {
    // Assess
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboards.map((d) => d.Properties.DashboardBody));
    for (const name of [
      SLO_METRIC.acceptanceGood,
      SLO_METRIC.deliveryGood,
      SLO_METRIC.acceptLatency,
      SLO_METRIC.timeInState,
      SLO_METRIC.terminalResults,
      SLO_METRIC.suppressions,
      SLO_METRIC.duplicateAcceptances,
      'OldestUnknownAgeSeconds',
      'ClaimConflicts',
      'budget left',
    ])
      expect(body).toContain(name);
  });

  it('publishes outcome events from the ledger stream with its own event source, to a bus it may only PutEvents to', () => {
    // Assess
    template.resourceCountIs('AWS::Events::EventBus', 1);
    const fn = stack.ledger.outcomeEvents.function;
    const fnId = stack.getLogicalId(fn.fn.node.defaultChild as never);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: fnId },
      EventSourceArn: Match.anyValue(),
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 1,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      ParallelizationFactor: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: { OnFailure: { Destination: Match.anyValue() } },
    });
    const statements = statementsOf(stack, template, fn.role);
    const put = statements.filter((s) => (s.Action as string[]).includes('events:PutEvents'));
    expect(put).toHaveLength(1);
    expect(JSON.stringify(put[0]!.Resource)).toMatch(/OutcomeEventsBus/);
    expect(statements.flatMap((s) => s.Action as string[])).not.toContain('dynamodb:PutItem');
  });

  it("delivers a tenant's events to its HTTPS endpoint through an API destination, retried for a day, then dead-lettered", () => {
    // Assess
    template.hasResourceProperties('AWS::Events::Connection', {
      AuthorizationType: 'API_KEY',
      AuthParameters: { ApiKeyAuthParameters: { ApiKeyName: 'x-api-key', ApiKeyValue: Match.anyValue() } },
    });
    template.hasResourceProperties('AWS::Events::ApiDestination', {
      InvocationEndpoint: 'https://hooks.acme.example/sendproof',
      HttpMethod: 'POST',
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { source: ['sendproof'], detail: { tenant: ['acme-games'] } },
      Targets: [
        Match.objectLike({
          InputPath: '$.detail',
          RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86400 },
          DeadLetterConfig: { Arn: Match.anyValue() },
        }),
      ],
    });
    // Anything in the dead-letter queue alarms.
    const dlqId = stack.getLogicalId(stack.ledger.outcomeEvents.deadLetterQueue.node.defaultChild as never);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(
      alarms.some(
        (a) =>
          a.Properties.MetricName === 'ApproximateNumberOfMessagesVisible' &&
          JSON.stringify(a.Properties.Dimensions).includes(dlqId),
      ),
    ).toBe(true);
  });

  it(
    'stays clean under cdk-nag with endpoints and a custom purpose',
    () => {
      // Act
      const report = new AwsSolutionsChecks(app).validateScope(stack);
      // Assess
      expect(
        report.violations.map(
          (v) => `${v.ruleName} ${JSON.stringify(v.violatingResources?.map((r) => r.resourceLogicalId))}`,
        ),
      ).toEqual([]);
    },
    SYNTH_TIMEOUT,
  );
});

describe('the outcome events window', () => {
  it('defaults to 5 s and takes whole seconds from 0 to 300', () => {
    expect(outcomeBatchingWindowSeconds(undefined)).toBe(5);
    expect(outcomeBatchingWindowSeconds(Duration.seconds(0))).toBe(0);
    expect(outcomeBatchingWindowSeconds(Duration.minutes(5))).toBe(300);
  });

  it('refuses a window Lambda would reject at deploy, at synth and by name', () => {
    for (const bad of [Duration.seconds(301), Duration.millis(1500)])
      expect(() => outcomeBatchingWindowSeconds(bad)).toThrow(
        /maxBatchingWindow must be whole seconds from 0 to 300/,
      );
  });
});
