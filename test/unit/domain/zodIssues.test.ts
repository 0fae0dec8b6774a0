import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config.js';
import { IntentSchemaV1, parseIntent } from '../../../lib/domain/intent.js';
import { BUILT_IN_PURPOSES, PurposeRegistry } from '../../../lib/domain/purposes.js';
import { ManualClock } from '../../support/manualClock.js';

/**
 * The three boundaries that turn zod issues into Sendproof's own errors (configuration, intent, purpose
 * policy) keep their messages and paths word for word across the move from classic zod to zod/mini
 * (issue 27): these are the sentences operators and callers read. Every figure here was first taken from
 * the classic-zod build.
 */
const configError = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected the configuration to be refused');
};

describe('configuration errors', () => {
  it('name the variable and say why, for built-in checks and the settings parsed from JSON', () => {
    expect(configError({ SENDPROOF_LEASE_SECONDS: '1' })).toBe(
      'invalid configuration: SENDPROOF_LEASE_SECONDS: Too small: expected number to be >=5',
    );
    expect(configError({ SENDPROOF_QUEUE_URL: 'not a url', SENDPROOF_EMAIL_TRANSPORT: 'pigeon' })).toBe(
      'invalid configuration: SENDPROOF_QUEUE_URL: Invalid URL; SENDPROOF_EMAIL_TRANSPORT: Invalid option: expected one of "ses"|"simulator"|"rest"|"resend"|"sendgrid"',
    );
    expect(configError({ SENDPROOF_PROVIDER_CIRCUIT: '{"failures":1.5,"extra":1}' })).toBe(
      'invalid configuration: SENDPROOF_PROVIDER_CIRCUIT: failures: Invalid input: expected int, received number; (root): Unrecognized key: "extra"',
    );
    expect(
      configError({ SENDPROOF_PROVIDER_CIRCUIT: '{"reportLagSeconds":600,"reportWindowSeconds":600}' }),
    ).toBe(
      'invalid configuration: SENDPROOF_PROVIDER_CIRCUIT: reportWindowSeconds: reportWindowSeconds must be longer than reportLagSeconds (else no minute is ever judged)',
    );
    expect(
      configError({
        SENDPROOF_RATE_LIMITS: '{"transports":{"ses":{"perSecond":0}},"tenants":{"a":{"perMinute":0.5}}}',
      }),
    ).toBe(
      'invalid configuration: SENDPROOF_RATE_LIMITS: transports.ses.perSecond: Too small: expected number to be >0; tenants.a.perMinute: Invalid input: expected int, received number',
    );
  });

  it('carry the messages of the custom checks inside transforms and refinements', () => {
    expect(configError({ SENDPROOF_PROVIDER_CIRCUIT: '{' })).toBe(
      'invalid configuration: SENDPROOF_PROVIDER_CIRCUIT: must be JSON',
    );
    expect(configError({ SENDPROOF_SEAL_LOCAL_KEY: 'c2hvcnQ=' })).toBe(
      'invalid configuration: SENDPROOF_SEAL_LOCAL_KEY: must be 32 bytes, base64',
    );
    expect(configError({ SENDPROOF_LOCAL_EVENT_ENDPOINTS: '[{"url":"x"}]' })).toBe(
      'invalid configuration: SENDPROOF_LOCAL_EVENT_ENDPOINTS: must be a JSON array of { url, tenant? }',
    );
    expect(configError({ SENDPROOF_PURPOSES: '{}' })).toBe(
      'invalid configuration: SENDPROOF_PURPOSES: must be a JSON array of purpose policies',
    );
  });
});

describe('intent errors', () => {
  const clock = new ManualClock(Date.parse('2026-11-30T12:00:00Z'));
  const base = {
    eventId: 'e1',
    purpose: 'password-reset',
    recipient: { ref: 'u1', email: 'a@example.com' },
    channels: ['email'],
    template: { id: 'password-reset', revision: '1' },
    expiresAt: '2026-12-01T00:00:00Z',
  };
  const issuesOf = (raw: unknown) => {
    const result = parseIntent(raw, { purposes: new PurposeRegistry(), clock });
    if (result.ok) throw new Error('expected the intent to be refused');
    return result.error.issues;
  };

  it('name the field by its path and give the schema message', () => {
    expect(
      issuesOf({
        ...base,
        version: 2,
        tenant: 'a@b',
        channels: ['email', 'email'],
        recipient: { ref: 'u1', email: 'nope', phone: '123' },
      }),
    ).toEqual([
      { field: 'version', message: 'Invalid input: expected 1' },
      { field: 'recipient.email', message: 'Invalid email address' },
      { field: 'recipient.phone', message: 'must be an E.164 number such as +15555550123' },
      { field: 'channels', message: 'must not repeat a channel' },
      {
        field: 'tenant',
        message:
          'must be 1-128 characters of letters, digits and . _ - (no @ or +: a key part is never an address)',
      },
    ]);
    expect(
      issuesOf({
        ...base,
        expiresAt: 'tomorrow',
        data: { k: 'x'.repeat(4097) },
        resendOf: { dedupeKey: '', decisionId: 'a:b' },
      }),
    ).toEqual([
      { field: 'data.k', message: 'Too big: expected string to have <=4096 characters' },
      { field: 'expiresAt', message: 'Invalid ISO datetime' },
      { field: 'resendOf.dedupeKey', message: 'Too small: expected string to have >=1 characters' },
      {
        field: 'resendOf.decisionId',
        message:
          'must be 1-128 characters of letters, digits and . _ - (no @ or +: a key part is never an address)',
      },
    ]);
  });

  it('keep the issue codes and the defaults of the schema', () => {
    const parsed = IntentSchemaV1.safeParse({ ...base, channels: [], surprise: 1 });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => [i.code, i.path.join('.'), i.message])).toEqual([
      ['too_small', 'channels', 'Too small: expected array to have >=1 items'],
      ['unrecognized_keys', '', 'Unrecognized key: "surprise"'],
    ]);
    const ok = IntentSchemaV1.parse(base);
    expect([ok.version, ok.tenant]).toEqual([1, 'default']);
  });
});

describe('purpose policy errors', () => {
  const receipt = BUILT_IN_PURPOSES[1]!;
  const refusal = (policy: unknown): string => {
    try {
      PurposeRegistry.withOverrides([policy]);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('expected the policy to be refused');
  };

  it('name the field of a check and of the cross-field rule', () => {
    expect(refusal({ ...receipt, retentionDays: 31, providerScheduling: true })).toBe(
      'purpose policy #0 is invalid: retentionDays: must be at least 35 days with providerScheduling (a provider may hold a send that long: Twilio SendAt up to 35 days)',
    );
    expect(
      refusal({
        ...receipt,
        maxAttempts: 0.5,
        smsCountries: ['uk'],
        smsSpendBreaker: {},
        slo: { accepted: { withinSeconds: 0, target: 1 }, duplicates: { atMostOneIn: 1 } },
      }),
    ).toBe(
      'purpose policy #0 is invalid: maxAttempts: Invalid input: expected int, received number; smsCountries.0: must be an ISO 3166-1 alpha-2 code such as "GB"; smsSpendBreaker.maxSends: Invalid input: expected number, received undefined; slo.accepted.withinSeconds: Too small: expected number to be >=1; slo.accepted.target: Too big: expected number to be <1; slo.duplicates.atMostOneIn: Too small: expected number to be >=10',
    );
  });
});
