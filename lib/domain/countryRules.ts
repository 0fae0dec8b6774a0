import { parsePhoneNumberFromString } from 'libphonenumber-js';

/**
 * SMS destination countries, from the E.164 number (libphonenumber-js). Pure. Only the ISO 3166-1
 * alpha-2 code ever leaves this module: the number itself is read here, in memory, and never returned.
 *
 * A number whose country cannot be told apart (a +1 number outside every NANP country's ranges, a
 * shared calling code with no matching range) has no country, and an allow-list refuses it: premium
 * Caribbean ranges under +1 are the classic SMS-pumping destination.
 */
export const countryOf = (phone: string): string | undefined =>
  parsePhoneNumberFromString(phone)?.country ?? undefined;

export type CountryVerdict =
  | { allowed: true; country: string | undefined }
  | { allowed: false; country: string | undefined; why: 'country_not_allowed' };

/** Allowed when the purpose lists no countries, or when the number's country is on its list. */
export const checkCountry = (allowList: readonly string[] | undefined, phone: string): CountryVerdict => {
  const country = countryOf(phone);
  if (!allowList) return { allowed: true, country };
  if (country !== undefined && allowList.includes(country)) return { allowed: true, country };
  return { allowed: false, country, why: 'country_not_allowed' };
};

export { countryLabel } from './countryLabel.js';
