import { describe, expect, it } from 'vitest';
import { appConfigFromContext, CONTEXT } from '../../infra/appConfig.js';
import { ENV, loadConfig } from '../../lib/config.js';
import { SES_AND_SMS, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;

describe('the attention-index shard count', () => {
  it(
    'reaches every function that reads or writes the ledger, from the CDK context',
    () => {
      // Prepare
      const app = appConfigFromContext((key) =>
        key === CONTEXT.attentionShards
          ? '8'
          : key === CONTEXT.email
            ? JSON.stringify(SES_AND_SMS.email)
            : key === CONTEXT.sms
              ? JSON.stringify(SES_AND_SMS.sms)
              : undefined,
      );
      // Act
      const { stack, template } = synthStack((scope) => app.ledger(scope));
      const envOf = (fn: { node: { defaultChild?: unknown } }) =>
        template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as never)].Properties.Environment
          .Variables as Record<string, unknown>;
      const ledger = stack.ledger;
      // Assess
      for (const fn of [ledger.dispatcher.function, ledger.reconciler.function, ledger.evidence.function]) {
        expect(envOf(fn.fn)[ENV.attentionShards]).toBe('8');
        expect(loadConfig({ [ENV.attentionShards]: '8' }).attentionShards).toBe(8);
      }
    },
    SYNTH_TIMEOUT,
  );

  it(
    'is refused outside 1..64 at synth and at cold start',
    () => {
      // Act / Assess
      expect(() => synthStack({ ...SES_AND_SMS, attentionShards: 0 })).toThrow(
        /attentionShards must be an integer between 1 and 64/,
      );
      expect(() => loadConfig({ [ENV.attentionShards]: '65' })).toThrow(/SENDPROOF_ATTENTION_SHARDS/);
      expect(loadConfig({}).attentionShards).toBe(4);
    },
    SYNTH_TIMEOUT,
  );
});
