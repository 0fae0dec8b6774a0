/**
 * Provider tags and contexts accept a narrow alphabet. These turn our non-secret labels (dedupe-key hash,
 * purpose, tenant) into values every provider takes, so the evidence recorder can match events back.
 */
export const KEY_TAG = 'sendproof-key';

/** Keeps [A-Za-z0-9_-.@] (SES EmailTags); everything else becomes `_`. */
export const sesTagValue = (value: string): string =>
  value.replace(/[^A-Za-z0-9_.@-]/g, '_').slice(0, 256) || '_';

/** Keeps [A-Za-z0-9_-] (Resend tags). */
export const resendTagValue = (value: string): string =>
  value.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 256) || '_';

/** `purpose` → `sendproof-purpose`, with the key always present and always ours. */
export const labelsFor = (
  idempotencyKey: string,
  tags: Readonly<Record<string, string>> | undefined,
  clean: (value: string) => string,
): Array<{ name: string; value: string }> => {
  const labels = Object.entries(tags ?? {})
    .filter(([name]) => name !== 'key')
    .map(([name, value]) => ({ name: `sendproof-${clean(name)}`, value: clean(value) }));
  return [{ name: KEY_TAG, value: clean(idempotencyKey) }, ...labels];
};
