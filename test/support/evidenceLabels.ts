import { fixedLabelKeys } from '../../lib/evidence/labelAuth.js';
import { LOCAL_CONTENT_HASH_KEY } from '../../lib/secrets/contentHashKey.js';
import { labelKeyOf, sealLabel } from '../../lib/transports/labels.js';

/**
 * What a provider echoes of a message we sent: its label (lib/transports/labels.ts), sealed under the
 * deployment secret the local stack uses (LOCAL_CONTENT_HASH_KEY), so events built here open in the
 * recorders tests build (`labels: testLabelKeys`) and in the local stack alike. Tests pass the row to
 * build the event a real provider would send, or a bare row key for an event whose authentic label names
 * no row of ours (a row past its retention).
 */
export type Echoed = string | { pk: string };

export const TEST_LABEL_SECRET = LOCAL_CONTENT_HASH_KEY;
export const testLabelKeys = fixedLabelKeys(TEST_LABEL_SECRET);
export const TEST_LABEL_KEY = labelKeyOf(TEST_LABEL_SECRET);

/** The label the dispatcher sends for a row (or a row key). */
export const labelOf = (row: Echoed): string =>
  sealLabel(TEST_LABEL_KEY, typeof row === 'string' ? row : row.pk);

/** SES `mail.tags` (arrays of values). */
export const sesTags = (row: Echoed): Record<string, string[]> => ({ 'sendproof-key': [labelOf(row)] });

/** SMS `context` (string values). */
export const smsContext = (row: Echoed): Record<string, string> => ({ 'sendproof-key': labelOf(row) });
