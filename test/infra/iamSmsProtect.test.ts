import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { getCountries } from 'libphonenumber-js';
import { describe, expect, it } from 'vitest';
import { END_USER_MESSAGING_SMS_COUNTRIES } from '../../infra/constructs/smsCountries.js';
import { protectCountryRules } from '../../infra/constructs/smsProtect.js';
import { BUILT_IN_PURPOSES } from '../../lib/domain/purposes.js';
import { SES_AND_SMS, synthStack } from './synth.js';

const reset = BUILT_IN_PURPOSES.find((p) => p.purpose === 'password-reset')!;
const SYNTH_TIMEOUT = 120_000;

// A protect configuration's rules are keyed by "the two-letter ISO country code. For a list of supported
// ISO country codes, see Supported countries and regions (SMS channel) in the AWS End User Messaging SMS
// User Guide" (UpdateProtectConfigurationCountryRuleSet): the list is infra/constructs/smsCountries.ts.
describe('SMS protect configuration countries are the ones End User Messaging documents', () => {
  it('names no country outside the documented list: not Ascension (AC), Tristan da Cunha (TA), Åland (AX)', () => {
    // Act
    const codes = protectCountryRules(['GB']).map((r) => r.countryCode);
    // Assess
    expect(codes).not.toContain('AC');
    expect(codes).not.toContain('TA');
    expect(codes).not.toContain('AX');
    expect(codes).toEqual(END_USER_MESSAGING_SMS_COUNTRIES.map(([code]) => code).sort());
  });

  it('keeps the documented list sound: unique codes, each a region a phone number can parse to', () => {
    // Assess: Kosovo (XK, +383) is documented and libphonenumber-js gives it; nothing else is invented.
    const codes = END_USER_MESSAGING_SMS_COUNTRIES.map(([code]) => code);
    const regions = new Set<string>(getCountries());
    expect(new Set(codes).size).toBe(codes.length);
    expect(codes.length).toBeGreaterThan(200);
    expect(codes.filter((c) => !regions.has(c))).toEqual([]);
    expect(codes).toContain('XK');
  });

  it(
    'refuses at synth an sms-v2 deployment whose purposes list an undocumented country, naming it',
    () => {
      // Act
      const synth = () =>
        synthStack({ ...SES_AND_SMS, purposes: [{ ...reset, smsCountries: ['GB', 'AC', 'TA'] }] });
      // Assess
      expect(synth).toThrow(
        /purpose "password-reset" smsCountries AC, TA: not a destination AWS End User Messaging SMS documents/,
      );
    },
    SYNTH_TIMEOUT,
  );

  it(
    'leaves those countries to another SMS transport (Twilio): no protect configuration is built there',
    () => {
      // Act
      const { template } = synthStack((scope) => ({
        ...SES_AND_SMS,
        sms: { transport: 'twilio', senderId: '+15005550006' },
        providerSecret: secretsmanager.Secret.fromSecretCompleteArn(
          scope,
          'ProviderSecret',
          'arn:aws:secretsmanager:eu-west-1:111122223333:secret:sendproof-providers-AbCdEf',
        ),
        purposes: [{ ...reset, smsCountries: ['GB', 'AC'] }],
      }));
      // Assess
      expect(Object.keys(template.findResources('AWS::SMSVOICE::ProtectConfiguration'))).toHaveLength(0);
    },
    SYNTH_TIMEOUT,
  );

  it('refuses a protect rule set for an undocumented country with a clear error', () => {
    // Assess
    expect(() => protectCountryRules(['GB', 'TA'])).toThrow(
      /TA not a destination AWS End User Messaging SMS documents/,
    );
  });
});
