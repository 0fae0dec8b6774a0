import { getCountries } from 'libphonenumber-js';
import type { PurposePolicy } from '../../lib/domain/purposes.js';

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

/** ALLOW for the listed countries, BLOCK for every other country libphonenumber-js knows. */
export const protectCountryRules = (allowed: readonly string[]) =>
  getCountries()
    .map((countryCode) => String(countryCode))
    .sort()
    .map((countryCode) => ({
      countryCode,
      protectStatus: allowed.includes(countryCode) ? 'ALLOW' : 'BLOCK',
    }));
