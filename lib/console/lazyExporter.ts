import { onFirstUse } from '../onFirstUse.js';
import type { BundleExporter } from './deps.js';

/**
 * An exporter built on the first export and kept (with whatever it caches, e.g. the digest key's public
 * half), so its clients load on that first export rather than at the console's cold start. A failed build
 * is not kept: the next export tries again.
 */
export const lazyExporter = (build: () => Promise<BundleExporter>): BundleExporter => {
  const exporter = onFirstUse(build);
  return async (subject, scope) => (await exporter())(subject, scope);
};
