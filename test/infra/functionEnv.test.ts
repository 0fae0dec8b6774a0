import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import type { NotificationLedgerProps } from '../../infra/NotificationLedger.js';
import {
  configSchema,
  FUNCTION_SETTINGS,
  type FunctionName,
  loadConfig,
  requireSettings,
  settingsFromEnv,
} from '../../lib/config.js';
import { fastConfig } from '../../lib/configFastPath.js';
import { consoleCapabilities } from '../../lib/console/wiring.js';
import { loadProviderChainsFor } from '../../lib/transports/load.js';
import { SES_AND_SMS, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;
const PROVIDER_SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:sendproof-providers-AbCdEf';

/**
 * A CloudFormation token (Ref, GetAtt, Join) stands for a value known only at deploy time; give it a
 * plausible one of the right shape so the entry's own config parsing can run on the real variable set.
 */
const resolveTokens = (variables: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(variables).map(([name, value]) => [
      name,
      typeof value === 'string'
        ? value
        : name.endsWith('_ARN')
          ? 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:resolved-AbCdEf'
          : name.endsWith('_URL')
            ? 'https://resolved.example'
            : `resolved-${name.toLowerCase()}`,
    ]),
  );

const CONFIGURATIONS: Array<[string, NotificationLedgerProps | ((scope: never) => NotificationLedgerProps)]> =
  [
    ['SES and End User Messaging SMS', SES_AND_SMS],
    [
      'Resend and Twilio',
      (scope) => ({
        email: { transport: 'resend', fromAddress: 'no-reply@example.com' },
        sms: { transport: 'twilio', senderId: '+15555550100' },
        providerSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, 'Provider', PROVIDER_SECRET_ARN),
      }),
    ],
    [
      'generic REST on both channels',
      (scope) => ({
        email: { transport: 'rest', fromAddress: 'no-reply@example.com' },
        sms: { transport: 'rest' },
        restBaseUrl: 'https://notify.example',
        providerSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, 'Provider', PROVIDER_SECRET_ARN),
      }),
    ],
  ];

describe('every deployed function can start with the environment the stack gives it', () => {
  for (const [name, props] of CONFIGURATIONS) {
    it(
      `${name}: each entry's required settings are present and its transports can be built`,
      async () => {
        // Prepare
        const { stack, template } = synthStack(props as never);
        const functions: Record<FunctionName, typeof stack.ledger.dispatcher.function> = {
          dispatch: stack.ledger.dispatcher.function,
          reconcile: stack.ledger.reconciler.function,
          evidence: stack.ledger.evidence.function,
          webhook: stack.ledger.evidence.webhook,
          archive: stack.ledger.archive.function,
          archiveMaintenance: stack.ledger.archive.maintenance,
          console: stack.ledger.console!.function,
          outcomes: stack.ledger.outcomeEvents.function,
          sloAudit: stack.ledger.serviceLevels.audit,
        };
        for (const [fn, construct] of Object.entries(functions) as Array<
          [FunctionName, (typeof functions)[FunctionName]]
        >) {
          const id = stack.getLogicalId(construct.fn.node.defaultChild as never);
          const env = resolveTokens(template.toJSON().Resources[id].Properties.Environment.Variables);
          // Act: exactly what the entry does at cold start (functions/<fn>/index.ts)
          const start = async (): Promise<void> => {
            const config = requireSettings(loadConfig(env), FUNCTION_SETTINGS[fn]);
            if (fn === 'dispatch' || fn === 'reconcile') await loadProviderChainsFor(config);
            // The console shows each row's transport capabilities, built without any provider secret.
            if (fn === 'console')
              expect((await consoleCapabilities(config))(undefined, 'email')).toBeDefined();
          };
          // Assess
          await expect(start(), `${fn} under ${name}`).resolves.toBeUndefined();
          // The cold start reads this environment without building the config schema, to the same settings.
          const settings = settingsFromEnv(env);
          const fast = fastConfig(settings);
          expect(fast, `${fn} under ${name}: the fast path declined`).toBeDefined();
          expect(JSON.stringify(fast)).toBe(JSON.stringify(configSchema().parse(settings)));
        }
      },
      SYNTH_TIMEOUT,
    );
  }

  it(
    'sends an evidence event the function failed on to the DLQ, not into the void',
    () => {
      const { template } = synthStack(SES_AND_SMS);
      // Evidence arrives through its queue (partial batch responses); a message the function keeps
      // failing on is redriven to the evidence DLQ, which an alarm watches. No asynchronous invoke is left.
      expect(Object.values(template.findResources('AWS::Lambda::EventInvokeConfig'))).toHaveLength(0);
      const queues = Object.values(template.findResources('AWS::SQS::Queue'));
      const evidence = queues.filter((q) =>
        JSON.stringify(q.Properties.RedrivePolicy ?? {}).includes('UndeliveredEvents'),
      );
      expect(evidence.length).toBeGreaterThan(0);
      for (const q of evidence) expect(q.Properties.RedrivePolicy.maxReceiveCount).toBeGreaterThan(0);
    },
    SYNTH_TIMEOUT,
  );
});
