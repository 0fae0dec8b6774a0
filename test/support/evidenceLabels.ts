import { fixedLabelKeys } from '../../lib/evidence/labelAuth.js';
import { labelKeyOf, sealLabel } from '../../lib/transports/labels.js';

/**
 * What a provider echoes of a message we sent: its label (lib/transports/labels.ts), sealed under the
 * test deployment's secret (the dispatch harness's content-hash key), so events built here open in the
 * recorders tests build (`labels: testLabelKeys`). A test whose dispatcher uses another secret passes it. Tests pass the row to
 * build the event a real provider would send, or a bare row key for an event whose authentic label names
 * no row of ours (a row past its retention).
 */
export type Echoed = string | { pk: string };

export const TEST_LABEL_SECRET = 'test-content-hash-key-0123456789';
export const testLabelKeys = fixedLabelKeys(TEST_LABEL_SECRET);
export const TEST_LABEL_KEY = labelKeyOf(TEST_LABEL_SECRET);

/** The label the dispatcher sends for a row (or a row key). */
export const labelOf = (row: Echoed, secret = TEST_LABEL_SECRET): string =>
  sealLabel(labelKeyOf(secret), typeof row === 'string' ? row : row.pk);

/** SES `mail.tags` (arrays of values). */
export const sesTags = (row: Echoed, secret?: string): Record<string, string[]> => ({
  'sendproof-key': [labelOf(row, secret)],
});

/** SMS `context` (string values). */
export const smsContext = (row: Echoed, secret?: string): Record<string, string> => ({
  'sendproof-key': labelOf(row, secret),
});
