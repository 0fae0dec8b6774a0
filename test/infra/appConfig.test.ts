import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { appConfigFromContext, CONTEXT } from '../../infra/appConfig.js';

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
  app: string;
  context: Record<string, unknown>;
};

describe('the standalone app configuration', () => {
  it('runs infra/app.ts with telemetry off', () => {
    // Assess
    expect(cdkJson.app).toBe('npx tsx infra/app.ts');
    expect((cdkJson as Record<string, unknown>)['cli-telemetry']).toBe(false);
  });

  it('turns the committed cdk.json context into NotificationLedger props', () => {
    // Prepare
    const stack = new Stack(new App(), 'Probe');
    // Act
    const config = appConfigFromContext((key) => cdkJson.context[key]);
    const props = config.ledger(stack);
    // Assess
    expect(config.stackName).toBe('Sendproof');
    expect(props.email).toEqual({
      transport: 'ses',
      fromAddress: 'no-reply@example.com',
      sesIdentity: 'example.com',
    });
    expect(props.archiveRetentionDays).toBe(365);
    expect(props.concurrency?.dispatcherMaxConcurrency).toBe(10);
  });

  it('accepts -c values as strings, JSON included', () => {
    // Prepare
    const context: Record<string, string> = {
      [CONTEXT.sms]:
        '{"transport":"sms-v2","originationIdentityArn":"arn:aws:sms-voice:eu-west-1:111122223333:pool/pool-1"}',
      [CONTEXT.archiveRetentionDays]: '730',
      [CONTEXT.alarmTopicArn]: 'arn:aws:sns:eu-west-1:111122223333:on-call',
    };
    // Act
    const props = appConfigFromContext((key) => context[key]).ledger(new Stack(new App(), 'Probe'));
    // Assess
    expect(props.sms.transport).toBe('sms-v2');
    expect(props.archiveRetentionDays).toBe(730);
    expect(props.alarmTopic?.topicArn).toBe('arn:aws:sns:eu-west-1:111122223333:on-call');
  });

  it('names the context key that is wrong', () => {
    // Act
    const parse = () =>
      appConfigFromContext((key) => (key === CONTEXT.email ? '{"transport":"pigeon"}' : undefined));
    // Assess
    expect(parse).toThrow(/sendproof:email/);
  });
});
