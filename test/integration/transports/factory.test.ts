import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config.js';
import { ConfigurationError } from '../../../lib/domain/errors.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { createTransports } from '../../../lib/transports/index.js';
import { emailMessage, keyFor } from '../../support/fakes/outbound.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';

const env = (extra: Record<string, string>) =>
  loadConfig({ SENDPROOF_LEDGER_TABLE: 'ledger', SENDPROOF_SMS_TRANSPORT: 'sms-v2', ...extra });

describe('createTransports picks adapters from config', () => {
  let sim: RunningProviderSimulator;
  let resend: ScriptedHttpServer;

  beforeAll(async () => {
    sim = await startProviderSimulator();
    resend = await ScriptedHttpServer.start(() => ({ reply: 200, body: { id: 're-1' } }));
  });

  afterAll(async () => {
    await sim.stop();
    await resend.stop();
  });

  it("'simulator' on both channels is the REST adapter aimed at SENDPROOF_REST_BASE_URL", async () => {
    // Prepare
    const config = env({
      SENDPROOF_EMAIL_TRANSPORT: 'simulator',
      SENDPROOF_SMS_TRANSPORT: 'simulator',
      SENDPROOF_REST_BASE_URL: sim.url,
    });

    // Act
    const { email, sms } = createTransports(config);
    const result = await email.send(emailMessage(), keyFor('factory'));

    // Assess
    expect([email.name, email.channel, sms.name, sms.channel]).toEqual(['rest', 'email', 'rest', 'sms']);
    expect(result.kind).toBe('accepted');
    expect(sim.requests().map((r) => r.idempotencyKey)).toEqual([keyFor('factory')]);
  });

  it('declares each adapter its capabilities', () => {
    // Act
    const aws = createTransports(
      env({ SENDPROOF_EMAIL_TRANSPORT: 'ses', SENDPROOF_SMS_TRANSPORT: 'sms-v2' }),
    );
    const http = createTransports(
      env({
        SENDPROOF_EMAIL_TRANSPORT: 'resend',
        SENDPROOF_SMS_TRANSPORT: 'twilio',
        SENDPROOF_SMS_ORIGINATION_IDENTITY: '+15005550006',
      }),
      { providerSecrets: async () => ({}) },
    );

    // Assess
    expect(aws.email.capabilities).toMatchObject({
      idempotencyKey: false,
      lookupByKey: false,
      pushEvidence: true,
    });
    expect(aws.sms.capabilities).toMatchObject({
      idempotencyKey: false,
      lookupByKey: false,
      pushEvidence: true,
    });
    expect(http.email.capabilities).toMatchObject({
      idempotencyKey: true,
      keyRetentionSeconds: 86_400,
      lookupByProviderId: true,
    });
    expect(http.sms.capabilities).toMatchObject({ idempotencyKey: false, lookupByProviderId: true });
  });

  it('Resend takes its API key from the provider-secret resolver, not from the environment', async () => {
    // Prepare
    const { email } = createTransports(env({ SENDPROOF_EMAIL_TRANSPORT: 'resend' }), {
      providerSecrets: async () => ({ resendApiKey: 're_from_secrets_manager' }),
      resendBaseUrl: resend.url,
    });

    // Act
    const result = await email.send(emailMessage(), keyFor('resend'));

    // Assess
    expect(result).toEqual({ kind: 'accepted', providerMessageId: 're-1' });
    expect(resend.requests.at(-1)?.headers.authorization).toBe('Bearer re_from_secrets_manager');
  });

  it('refuses a configuration it cannot honour', () => {
    // Act / Assess
    expect(() => createTransports(env({ SENDPROOF_EMAIL_TRANSPORT: 'simulator' }))).toThrow(
      ConfigurationError,
    );
    expect(() => createTransports(env({ SENDPROOF_EMAIL_TRANSPORT: 'resend' }))).toThrow(/providerSecrets/);
    expect(() =>
      createTransports(env({ SENDPROOF_SMS_TRANSPORT: 'twilio' }), { providerSecrets: async () => ({}) }),
    ).toThrow(/SENDPROOF_SMS_ORIGINATION_IDENTITY/);
  });
});
