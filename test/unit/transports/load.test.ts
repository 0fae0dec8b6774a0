import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config.js';
import { createProviderChains, type ProviderChains } from '../../../lib/transports/index.js';
import { loadProviderChains } from '../../../lib/transports/load.js';

const EMAIL = ['ses', 'resend', 'sendgrid', 'simulator', 'rest'] as const;
const SMS = ['sms-v2', 'twilio', 'simulator', 'rest'] as const;
const BASE = {
  SENDPROOF_REST_BASE_URL: 'http://127.0.0.1:9',
  SENDPROOF_SMS_ORIGINATION_IDENTITY: '+15555550100',
};
const secrets = { providerSecrets: async () => ({}) };

const shape = (chains: ProviderChains) =>
  (['email', 'sms'] as const).flatMap((channel) =>
    chains[channel].map((t) => ({
      channel,
      class: t.constructor.name,
      name: t.name,
      capabilities: t.capabilities,
    })),
  );

/** The loader imports only the configured adapters, and builds them with the same switch as the CLI. */
describe('loadProviderChains (lib/transports/load.ts) and createProviderChains build the same chains', () => {
  for (const email of EMAIL)
    for (const sms of SMS)
      it(`${email} + ${sms}`, async () => {
        const config = loadConfig({
          ...BASE,
          SENDPROOF_EMAIL_TRANSPORT: email,
          SENDPROOF_SMS_TRANSPORT: sms,
        });
        const expected = shape(createProviderChains(config, secrets));
        expect(shape(await loadProviderChains(config, secrets))).toEqual(expected);
      });

  it('failover lists', async () => {
    const config = loadConfig({
      ...BASE,
      SENDPROOF_EMAIL_PROVIDERS: 'ses,sendgrid,resend',
      SENDPROOF_SMS_PROVIDERS: 'twilio,sms-v2,simulator',
    });
    const expected = shape(createProviderChains(config, secrets));
    expect(shape(await loadProviderChains(config, secrets))).toEqual(expected);
    expect(expected.map((t) => t.class)).toEqual([
      'SesTransport',
      'SendGridTransport',
      'ResendTransport',
      'TwilioTransport',
      'SmsV2Transport',
      'RestTransport',
    ]);
  });

  it('refuses the same configurations with the same messages', async () => {
    const invalid: Array<[Record<string, string>, object]> = [
      [{ SENDPROOF_EMAIL_TRANSPORT: 'simulator' }, {}],
      [{ SENDPROOF_SMS_TRANSPORT: 'rest' }, secrets],
      [{ SENDPROOF_EMAIL_TRANSPORT: 'resend' }, {}],
      [{ SENDPROOF_EMAIL_TRANSPORT: 'sendgrid' }, {}],
      [{ SENDPROOF_SMS_TRANSPORT: 'twilio' }, secrets],
      [{ SENDPROOF_SMS_TRANSPORT: 'twilio', SENDPROOF_SMS_ORIGINATION_IDENTITY: '+15555550100' }, {}],
      [{ SENDPROOF_EMAIL_PROVIDERS: 'ses,resend' }, {}],
    ];
    for (const [env, deps] of invalid) {
      const config = loadConfig(env);
      let message = '';
      try {
        createProviderChains(config, deps);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, JSON.stringify(env)).not.toBe('');
      await expect(loadProviderChains(config, deps), JSON.stringify(env)).rejects.toThrow(message);
    }
  });
});
