/**
 * Provider tags and contexts accept a narrow alphabet. These turn our non-secret labels (dedupe-key hash,
 * purpose, tenant) into values every provider takes, so the evidence recorder can match events back.
 */
import { rowLabelOf } from '../domain/keys.js';

export const KEY_TAG = 'sendproof-key';
/** The row label (lib/domain/keys.ts rowLabelOf): evidence names its ledger row, no pointer item needed. */
export const ROW_TAG = 'sendproof-row';

/** Keeps [A-Za-z0-9_-.@] (SES EmailTags); everything else becomes `_`. */
export const sesTagValue = (value: string): string =>
  value.replace(/[^A-Za-z0-9_.@-]/g, '_').slice(0, 256) || '_';

/** Keeps [A-Za-z0-9_-] (Resend tags). */
export const resendTagValue = (value: string): string =>
  value.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 256) || '_';

/**
 * `purpose` → `sendproof-purpose`, with the key hash always present and always ours, and the row label
 * when the readable key fits one (base64url passes every cleaner unchanged).
 */
export const labelsFor = (
  idempotencyKey: string,
  tags: Readonly<Record<string, string>> | undefined,
  clean: (value: string) => string,
  rowKey?: string,
): Array<{ name: string; value: string }> => {
  const labels = Object.entries(tags ?? {})
    .filter(([name]) => name !== 'key' && name !== 'row')
    .map(([name, value]) => ({ name: `sendproof-${clean(name)}`, value: clean(value) }));
  const row = rowKey === undefined ? undefined : rowLabelOf(rowKey);
  return [
    { name: KEY_TAG, value: clean(idempotencyKey) },
    ...(row ? [{ name: ROW_TAG, value: row }] : []),
    ...labels,
  ];
};
