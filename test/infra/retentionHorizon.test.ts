import { SQSClient } from '@aws-sdk/client-sqs';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { appConfigFromContext, CONTEXT } from '../../infra/appConfig.js';
import { IntakeQueue } from '../../infra/constructs/IntakeQueue.js';
import { NotificationLedger } from '../../infra/NotificationLedger.js';
import { ENV, loadConfig } from '../../lib/config.js';
import { ConfigurationError } from '../../lib/domain/errors.js';
import {
  BUILT_IN_PURPOSES,
  PROVIDER_HOLD_MAX_DAYS,
  PurposeRegistry,
  purposePolicySchema,
  RETENTION_FLOOR_DAYS,
  SCHEDULE_HORIZON_DAYS,
} from '../../lib/domain/purposes.js';
import { publishIntents } from '../../lib/publish/publishIntents.js';
import { FINAL_ROW_RETENTION_FLOOR_DAYS, INTAKE_QUEUE } from '../../lib/queueDefinition.js';
import { purposesFor } from '../../lib/wiring.js';
import { SES_AND_SMS } from './synth.js';

/** A purpose whose final rows would expire before a redriven copy of its intent stops arriving. */
const shortLived = {
  ...BUILT_IN_PURPOSES[0]!,
  purpose: 'otp-login',
  policyVersion: 'otp-login/1',
  retentionDays: 7,
};
const HORIZON =
  /retentionDays: must be at least 18 days .*redrive after the row's TTL claim again and resend/;

describe('final-row retention versus the queue horizon', () => {
  it('is at least the DLQ retention plus the redrive window (the intake queue retention)', () => {
    // Assess
    expect(FINAL_ROW_RETENTION_FLOOR_DAYS).toBe(
      INTAKE_QUEUE.retentionDays + INTAKE_QUEUE.intakeRetentionDays,
    );
    expect(FINAL_ROW_RETENTION_FLOOR_DAYS).toBe(18);
    for (const policy of BUILT_IN_PURPOSES)
      expect(policy.retentionDays).toBeGreaterThanOrEqual(FINAL_ROW_RETENTION_FLOOR_DAYS);
  });

  it('refuses a shorter retention in a purpose policy, and accepts exactly the floor', () => {
    // Act
    const refused = purposePolicySchema().safeParse(shortLived);
    const floor = purposePolicySchema().safeParse({
      ...shortLived,
      retentionDays: RETENTION_FLOOR_DAYS,
    });
    // Assess
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.path).toEqual(['retentionDays']);
    expect(floor.success).toBe(true);
  });

  it('refuses it in the functions configuration (SENDPROOF_PURPOSES) with a clear error', () => {
    // Prepare
    const config = loadConfig({ [ENV.ledgerTable]: 'ledger', [ENV.purposes]: JSON.stringify([shortLived]) });
    // Act
    const build = () => purposesFor(config);
    // Assess
    expect(build).toThrow(ConfigurationError);
    expect(build).toThrow(HORIZON);
    expect(() => PurposeRegistry.withOverrides([{ ...shortLived, retentionDays: 30 }])).not.toThrow();
  });

  it('refuses it in the CDK context and in the construct props, at synth', () => {
    // Act
    const fromContext = () =>
      appConfigFromContext((key) => (key === CONTEXT.purposes ? JSON.stringify([shortLived]) : undefined));
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const fromProps = () =>
      new NotificationLedger(new Stack(app, 'Host'), 'Ledger', { ...SES_AND_SMS, purposes: [shortLived] });
    // Assess
    expect(fromContext).toThrow(/sendproof:purposes: must be at least 18 days/);
    expect(fromProps).toThrow(HORIZON);
  });

  it('matches the queues the construct synthesizes (DLQ 14 days, intake 4 days)', () => {
    // Prepare
    const stack = new Stack(new App(), 'Queues');
    // Act
    new IntakeQueue(stack, 'Intake', { dispatcherTimeout: { toSeconds: () => 60 } as never });
    const retention = Object.values(Template.fromStack(stack).findResources('AWS::SQS::Queue')).map(
      (q) => (q.Properties as { MessageRetentionPeriod: number }).MessageRetentionPeriod,
    );
    // Assess
    expect(retention.sort((a, b) => a - b)).toEqual([
      INTAKE_QUEUE.intakeRetentionDays * 86_400,
      INTAKE_QUEUE.retentionDays * 86_400,
    ]);
  });
});

describe("retention versus the scheduling horizon and a provider's hold window (issue 26 item 1)", () => {
  const scheduledTooShort = { ...shortLived, retentionDays: 20 };
  const HORIZON_30 = /retentionDays: must be at least 30 days \(the scheduling horizon/;
  const HOLD_35 = /retentionDays: must be at least 35 days with providerScheduling/;

  it("the floor is the longer of the queues' horizon and the scheduling horizon; the hold window is Twilio's 35 days", () => {
    // Assess
    expect(SCHEDULE_HORIZON_DAYS).toBe(30);
    expect(RETENTION_FLOOR_DAYS).toBe(Math.max(FINAL_ROW_RETENTION_FLOOR_DAYS, SCHEDULE_HORIZON_DAYS));
    expect(PROVIDER_HOLD_MAX_DAYS).toBe(35);
    for (const policy of BUILT_IN_PURPOSES)
      expect(policy.retentionDays).toBeGreaterThanOrEqual(RETENTION_FLOOR_DAYS);
  });

  it('refuses a retention shorter than the scheduling horizon, with a clear configuration error', () => {
    // Act
    const build = () =>
      purposesFor(
        loadConfig({ [ENV.ledgerTable]: 'ledger', [ENV.purposes]: JSON.stringify([scheduledTooShort]) }),
      );
    // Assess
    expect(build).toThrow(ConfigurationError);
    expect(build).toThrow(HORIZON_30);
    expect(purposePolicySchema().safeParse({ ...shortLived, retentionDays: 30 }).success).toBe(true);
  });

  it("refuses providerScheduling with a retention shorter than a provider's hold window, in the functions and at synth", () => {
    // Prepare
    const held = { ...shortLived, providerScheduling: true, retentionDays: 30 };
    // Act
    const build = () => PurposeRegistry.withOverrides([held]);
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const fromProps = () =>
      new NotificationLedger(new Stack(app, 'HeldHost'), 'Ledger', { ...SES_AND_SMS, purposes: [held] });
    // Assess
    expect(build).toThrow(ConfigurationError);
    expect(build).toThrow(HOLD_35);
    expect(fromProps).toThrow(HOLD_35);
    expect(() => PurposeRegistry.withOverrides([{ ...held, retentionDays: 35 }])).not.toThrow();
  });

  it('refuses a publisher horizon longer than the one every retention covers', async () => {
    // Act
    const publish = publishIntents(new SQSClient({ region: 'us-east-1' }), 'http://127.0.0.1:1/q', [], {
      scheduleHorizonMs: (SCHEDULE_HORIZON_DAYS + 1) * 86_400_000,
    });
    // Assess
    await expect(publish).rejects.toThrow(ConfigurationError);
    await expect(
      publishIntents(new SQSClient({ region: 'us-east-1' }), 'http://127.0.0.1:1/q', [], {
        scheduleHorizonMs: SCHEDULE_HORIZON_DAYS * 86_400_000,
      }),
    ).resolves.toEqual([]);
  });
});
