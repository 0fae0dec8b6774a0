import { describe, expect, it } from 'vitest';
import { loadConfig, providersOf } from '../../../lib/config.js';
import { provesNotTaken } from '../../../lib/dispatch/providers.js';
import { createProviderChains } from '../../../lib/transports/index.js';

describe('failover provider lists (SENDPROOF_EMAIL_PROVIDERS / SENDPROOF_SMS_PROVIDERS)', () => {
  it('reads an ordered list (comma-separated or JSON), names its first the transport, and builds each adapter', () => {
    // Act
    const config = loadConfig({
      SENDPROOF_EMAIL_PROVIDERS: 'ses, sendgrid',
      SENDPROOF_SMS_PROVIDERS: '["sms-v2","twilio"]',
      SENDPROOF_SMS_ORIGINATION_IDENTITY: '+15555550100',
    });
    const chains = createProviderChains(config, { providerSecrets: async () => ({}) });
    // Assess
    expect(providersOf(config, 'email')).toEqual(['ses', 'sendgrid']);
    expect(config.emailTransport).toBe('ses');
    expect(chains.email.map((t) => t.name)).toEqual(['ses', 'sendgrid']);
    expect(chains.sms.map((t) => t.name)).toEqual(['sms-v2', 'twilio']);
    expect(config.providerCircuit).toEqual({
      failures: 5,
      windowSeconds: 60,
      openSeconds: 60,
      cacheMs: 1000,
      reportLagSeconds: 600,
      reportWindowSeconds: 1800,
      reportMinSample: 20,
      reportLateShare: 0.5,
    });
  });

  it('without a list, the channel has its one transport', () => {
    expect(providersOf(loadConfig({ SENDPROOF_EMAIL_TRANSPORT: 'resend' }), 'email')).toEqual(['resend']);
  });

  it('refuses a provider twice, an unknown name, rest with simulator, and a bad circuit', () => {
    expect(() => loadConfig({ SENDPROOF_EMAIL_PROVIDERS: 'ses,ses' })).toThrow(
      /SENDPROOF_EMAIL_PROVIDERS: names a provider twice/,
    );
    expect(() => loadConfig({ SENDPROOF_SMS_PROVIDERS: 'sms-v2,carrier-pigeon' })).toThrow(
      /SENDPROOF_SMS_PROVIDERS/,
    );
    expect(() => loadConfig({ SENDPROOF_EMAIL_PROVIDERS: 'rest,simulator' })).toThrow(/share one base URL/);
    expect(() => loadConfig({ SENDPROOF_PROVIDER_CIRCUIT: '{"failures":0}' })).toThrow(
      /SENDPROOF_PROVIDER_CIRCUIT: failures/,
    );
    expect(() => loadConfig({ SENDPROOF_PROVIDER_CIRCUIT: '{"reportLateShare":1.5}' })).toThrow(
      /SENDPROOF_PROVIDER_CIRCUIT: reportLateShare/,
    );
    expect(() =>
      loadConfig({ SENDPROOF_PROVIDER_CIRCUIT: '{"reportLagSeconds":900,"reportWindowSeconds":900}' }),
    ).toThrow(
      /SENDPROOF_PROVIDER_CIRCUIT: reportWindowSeconds: reportWindowSeconds must be longer than reportLagSeconds/,
    );
  });

  it('only a provider-caused refusal or a request that never left proves the provider did not take it', () => {
    expect(provesNotTaken({ kind: 'rejected', reason: 'x', cause: 'provider' })).toBe(true);
    expect(provesNotTaken({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' })).toBe(true);
    expect(provesNotTaken({ kind: 'retryable', reason: 'request_not_fully_sent:EPIPE' })).toBe(true);
    for (const cause of ['recipient', 'content', 'account', 'opted_out'] as const)
      expect(provesNotTaken({ kind: 'rejected', reason: 'x', cause })).toBe(false);
    expect(provesNotTaken({ kind: 'retryable', reason: 'http_429' })).toBe(false);
    expect(
      provesNotTaken({
        kind: 'retryable',
        reason: 'request_never_left:ECONNREFUSED',
        hold: { reason: 'daily_quota' },
      }),
    ).toBe(false);
    expect(provesNotTaken({ kind: 'ambiguous', reason: 'provider_timeout_after_send' })).toBe(false);
    expect(
      provesNotTaken({ kind: 'ambiguous', reason: 'provider_error_after_send:ServiceUnavailable' }),
    ).toBe(false);
  });
});
