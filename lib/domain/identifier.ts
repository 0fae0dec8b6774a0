import * as z from 'zod/mini';
import './zodLocale.js';

/**
 * Identifiers that become part of a dedupe key (tenant, purpose, event id, recipient ref, resend decision
 * id): no `:` (the key separator), no spaces, bounded, and never an address. The key is the ledger's
 * partition key and appears in every log line (`dedupeKey`), the archive and operator output, so `@` and
 * `+` are refused here, the same rule `safeHints` (lib/dispatch/sideRows.ts) applies to what it keeps: a
 * value such as `jane.doe@example.com` or `+15555550123` in any key component is a validation error at the
 * boundary, never a key. Providers see none of these (lib/transports/labels.ts: an opaque label).
 */
export const KEY_COMPONENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export const KEY_COMPONENT_MESSAGE =
  'must be 1-128 characters of letters, digits and . _ - (no @ or +: a key part is never an address)';
export const IdentifierSchema = z
  .string()
  .check(z.minLength(1), z.maxLength(128), z.regex(KEY_COMPONENT, KEY_COMPONENT_MESSAGE));
