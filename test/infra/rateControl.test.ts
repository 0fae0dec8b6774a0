import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ENV } from '../../lib/config.js';
import { BUILT_IN_PURPOSES } from '../../lib/domain/purposes.js';
import { HOLD_METRIC } from '../../lib/rate/TransportHolds.js';
import { SES_AND_SMS, synthStack } from './synth.js';

const reset = BUILT_IN_PURPOSES.find((p) => p.purpose === 'password-reset')!;

describe('rate control and SMS protection in the CDK app', () => {
  const { template } = synthStack({
    ...SES_AND_SMS,
    purposes: [
      {
        ...reset,
        smsCountries: ['GB', 'DE'],
        smsSpendBreaker: { maxSends: 500, windowSeconds: 3600, cooldownSeconds: 900 },
      },
    ],
    rateLimits: { transports: { ses: { perSecond: 14 }, 'sms-v2': { perSecond: 50 } } },
  });

  it('creates an End User Messaging SMS protect configuration with the purposes’ countries, on the configuration set', () => {
    const protect = Object.values(template.findResources('AWS::SMSVOICE::ProtectConfiguration'));
    expect(protect).toHaveLength(1);
    const rules = protect[0]!.Properties.CountryRuleSet.SMS as Array<{
      CountryCode: string;
      ProtectStatus: string;
    }>;
    expect(rules.filter((r) => r.ProtectStatus === 'ALLOW').map((r) => r.CountryCode)).toEqual(['DE', 'GB']);
    expect(rules.find((r) => r.CountryCode === 'NG')?.ProtectStatus).toBe('BLOCK');
    expect(rules.length).toBeGreaterThan(200);
    template.hasResourceProperties('AWS::SMSVOICE::ConfigurationSet', {
      ProtectConfigurationId: Match.objectLike({ 'Fn::GetAtt': Match.anyValue() }),
    });
  });

  it('derives the SQS event source maximum concurrency from the slowest configured rate', () => {
    // 14/s × 0.3 s in flight = 4.2 sends, 5 records per invocation → 1 + 1 = 2 invocations.
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 2 },
    });
  });

  it('hands the dispatcher its rate settings and alarms when a spend breaker opens', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    const envs = functions.map((f) => f.Properties.Environment?.Variables ?? {});
    const dispatcher = envs.find((e) => e[ENV.rateLimits] !== undefined);
    expect(JSON.parse(dispatcher?.[ENV.rateLimits])).toMatchObject({
      transports: { ses: { perSecond: 14, slotMs: 500 } },
      maxWaitMs: 2000,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'SpendBreakerOpened' });
  });

  it('alarms when rows wait for a transport-wide hold (issue 25), on the metric the dispatcher emits', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: HOLD_METRIC.rows,
      Namespace: 'Sendproof',
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('creates no protect configuration when no purpose lists countries', () => {
    const plain = synthStack(SES_AND_SMS).template;
    expect(Object.keys(plain.findResources('AWS::SMSVOICE::ProtectConfiguration'))).toHaveLength(0);
    plain.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 10 },
    });
  });
});
