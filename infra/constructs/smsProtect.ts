import type { PurposePolicy } from '../../lib/domain/purposes.js';
import { END_USER_MESSAGING_SMS_COUNTRIES, END_USER_MESSAGING_SMS_COUNTRY_CODES } from './smsCountries.js';

/**
 * The countries an AWS End User Messaging SMS protect configuration allows: every country some purpose
 * lists in `smsCountries`. Undefined when no purpose lists any (nothing to protect: SMS is open, as in
 * Sendproof). A protect configuration is account-wide for its configuration set, so a purpose without a
 * list is then held to the union of the others'.
 */
export const protectedSmsCountries = (
  purposes: readonly Pick<PurposePolicy, 'smsCountries'>[],
): string[] | undefined => {
  const listed = purposes.flatMap((p) => p.smsCountries ?? []);
  return listed.length ? [...new Set(listed)].sort() : undefined;
};

/**
 * The purposes' SMS countries End User Messaging does not document as SMS destinations
 * (infra/constructs/smsCountries.ts), one line per purpose: with the sms-v2 transport these can never be
 * sent, and a protect configuration may not name them.
 */
export const unsupportedSmsCountries = (
  purposes: readonly Pick<PurposePolicy, 'purpose' | 'smsCountries'>[],
): string[] =>
  purposes.flatMap((p) => {
    const unsupported = (p.smsCountries ?? []).filter((c) => !END_USER_MESSAGING_SMS_COUNTRY_CODES.has(c));
    return unsupported.length
      ? [
          `purpose "${p.purpose}" smsCountries ${unsupported.join(', ')}: not a destination AWS End User Messaging SMS documents for SMS (the list and its source: infra/constructs/smsCountries.ts)`,
        ]
      : [];
  });

/**
 * ALLOW for the listed countries, BLOCK for every other country End User Messaging documents, and no rule
 * for anything it does not (a country rule set keyed by a code the service does not know is not a
 * protect configuration it can hold). Throws on a listed country outside that list.
 */
export const protectCountryRules = (allowed: readonly string[]) => {
  const unsupported = allowed.filter((c) => !END_USER_MESSAGING_SMS_COUNTRY_CODES.has(c));
  if (unsupported.length)
    throw new Error(
      `SMS protect configuration: ${unsupported.join(', ')} not a destination AWS End User Messaging SMS documents for SMS (the list and its source: infra/constructs/smsCountries.ts)`,
    );
  return END_USER_MESSAGING_SMS_COUNTRIES.map(([code]) => code)
    .sort()
    .map((countryCode) => ({
      countryCode,
      protectStatus: allowed.includes(countryCode) ? 'ALLOW' : 'BLOCK',
    }));
};
