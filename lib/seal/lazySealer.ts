import type { IntentSealer } from './IntentSealer.js';

/**
 * A sealer whose Encryption SDK (and, in AWS, the KMS client it carries) loads on the first seal or
 * open. Only fallback intents are sealed, so a function that never parks one never loads it: module
 * init stays what the happy path needs.
 */
export const lazySealer = (load: () => Promise<IntentSealer>): IntentSealer => {
  let loaded: Promise<IntentSealer> | undefined;
  const sealer = () => {
    loaded ??= load();
    return loaded;
  };
  return {
    seal: async (body, logicalKey) => (await sealer()).seal(body, logicalKey),
    open: async (sealed, logicalKey) => (await sealer()).open(sealed, logicalKey),
  };
};
