import { createHmac } from 'node:crypto';
import type { SuppressionDetails } from './port.js';

/**
 * SMS opt-out at the provider (issue 29). Carriers require a STOP to be honoured, so a provider's opt-out
 * becomes a suppression with source `provider_opt_out`, which only the provider's opt-in (START) or an
 * operator's forced, recorded removal lifts.
 *
 * Two entries carry it:
 * - the recipient's own (`tenant`, `recipientRef`, `sms`), written when a send is refused because the
 *   destination opted out (SMS v2 `DESTINATION_PHONE_NUMBER_OPTED_OUT`, Twilio 21610): the row names them;
 * - the number's (`NUMBER_TENANT`, `numberRefOf(phone)`, `sms`), written from an inbound STOP reply, which
 *   names only the sender's number. The provider's opt-out list is the account's, so the number's entry
 *   holds for every tenant. Its key is a keyed HMAC of the number (the content-hash key): never the
 *   number, and not a plain hash (a phone number's space is small enough to enumerate).
 * The dispatcher's gates read both before every provider call on SMS.
 */
export const OPT_OUT_SOURCE = 'provider_opt_out';
export const OPT_OUT_REASON = 'opted_out';

/** The tenant of a number's suppression entry: the provider's opt-out list is per account, not per tenant. */
export const NUMBER_TENANT = '*';

/** The suppression ref of an E.164 number: `tel:` and 32 characters of HMAC-SHA256 (base64url). */
export const numberRefOf = (phone: string, key: string): string =>
  `tel:${createHmac('sha256', key).update(`tel:${phone.trim()}`, 'utf8').digest('base64url').slice(0, 32)}`;

/** The details of an opt-out suppression: source `provider_opt_out`, and which provider (and message) said so. */
export const optOutDetails = (by: string, at: number): SuppressionDetails => ({
  source: OPT_OUT_SOURCE,
  at,
  by,
});
