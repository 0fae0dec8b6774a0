import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { appConfigFromContext, CONTEXT } from '../../infra/appConfig.js';
import { ENV, loadConfig } from '../../lib/config.js';
import { ConfigurationError } from '../../lib/domain/errors.js';
import { REPLAY_MARGIN_MS, replayWindowOpen } from '../../lib/domain/replay.js';
import { createTransports } from '../../lib/transports/index.js';
import { synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;
const PROVIDER_SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:sendproof-providers-AbCdEf';
const ONE_HOUR = 3600;

const restConfig = (extra: Record<string, string> = {}) =>
  loadConfig({
    [ENV.ledgerTable]: 'ledger',
    [ENV.emailTransport]: 'rest',
    [ENV.smsTransport]: 'simulator',
    [ENV.restBaseUrl]: 'https://notify.example',
    ...extra,
  });

/** A row first dispatched through the REST adapter at `sentAt`, whose answer was lost. */
const rowSentAt = (sentAt: number) => ({
  transport: 'rest',
  history: [
    { s: 'claimed' as const, at: sentAt - 10 },
    { s: 'dispatching' as const, at: sentAt },
    { s: 'unknown' as const, at: sentAt + 5_000 },
  ],
});

describe("the REST adapter's idempotency-key retention is configuration", () => {
  it('reaches both REST adapters and bounds the replay window', () => {
    // Prepare
    const config = restConfig({ [ENV.restKeyRetentionSeconds]: String(ONE_HOUR) });
    const sentAt = 1_800_000_000_000;
    // Act
    const { email, sms } = createTransports(config, { providerSecrets: async () => ({}) });
    const closesAt = sentAt + ONE_HOUR * 1000 - REPLAY_MARGIN_MS;
    // Assess
    expect([email.capabilities.keyRetentionSeconds, sms.capabilities.keyRetentionSeconds]).toEqual([
      ONE_HOUR,
      ONE_HOUR,
    ]);
    expect(replayWindowOpen(rowSentAt(sentAt), email, closesAt - 1)).toBe(true);
    // The provider forgets the key after an hour: a replay two hours later would be a second send.
    expect(replayWindowOpen(rowSentAt(sentAt), email, closesAt)).toBe(false);
    expect(replayWindowOpen(rowSentAt(sentAt), email, sentAt + 2 * ONE_HOUR * 1000)).toBe(false);
  });

  it('defaults to 24 h and refuses a figure the replay margin would swallow', () => {
    // Act
    const { email } = createTransports(restConfig(), { providerSecrets: async () => ({}) });
    const tooShort = () => restConfig({ [ENV.restKeyRetentionSeconds]: '60' });
    // Assess
    expect(email.capabilities.keyRetentionSeconds).toBe(86_400);
    expect(tooShort).toThrow(ConfigurationError);
    expect(tooShort).toThrow(/SENDPROOF_REST_KEY_RETENTION_SECONDS: .*>=120/);
  });

  it(
    'is passed from the CDK context to the dispatcher and the reconciler',
    () => {
      // Prepare
      const app = appConfigFromContext(
        (key) =>
          ({
            [CONTEXT.email]: '{"transport":"rest","fromAddress":"no-reply@example.com"}',
            [CONTEXT.sms]: '{"transport":"simulator"}',
            [CONTEXT.restBaseUrl]: 'https://notify.example',
            [CONTEXT.providerSecretArn]: PROVIDER_SECRET_ARN,
            [CONTEXT.restKeyRetentionSeconds]: String(ONE_HOUR),
          })[key],
      );
      // Act
      const { stack, template } = synthStack((scope) => app.ledger(scope));
      const envOf = (fn: { node: { defaultChild?: unknown } }) =>
        template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as never)].Properties.Environment
          .Variables as Record<string, unknown>;
      // Assess
      expect(envOf(stack.ledger.dispatcher.function.fn)[ENV.restKeyRetentionSeconds]).toBe(String(ONE_HOUR));
      expect(envOf(stack.ledger.reconciler.function.fn)[ENV.restKeyRetentionSeconds]).toBe(String(ONE_HOUR));
    },
    SYNTH_TIMEOUT,
  );

  it(
    'refuses an out-of-range retention in the construct props',
    () => {
      // Act
      const build = () =>
        synthStack((scope) => ({
          email: { transport: 'rest', fromAddress: 'no-reply@example.com' },
          sms: { transport: 'rest' },
          restBaseUrl: 'https://notify.example',
          restKeyRetentionSeconds: 30,
          providerSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, 'Provider', PROVIDER_SECRET_ARN),
        }));
      // Assess
      expect(build).toThrow(/restKeyRetentionSeconds must be an integer between 120 and 2592000/);
    },
    SYNTH_TIMEOUT,
  );
});
