import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder holding package.json, templates/ and queries/. This module is `<root>/lib/packageRoot.ts` in
 * the repository and `<root>/dist/lib/packageRoot.js` in the built package (scripts/build.mjs mirrors the
 * source tree under dist/), so modules that read package files find them the same way from both.
 */
const LIB_DIR = dirname(fileURLToPath(import.meta.url));
export const PACKAGE_ROOT =
  basename(dirname(LIB_DIR)) === 'dist' ? resolve(LIB_DIR, '..', '..') : resolve(LIB_DIR, '..');

export const fromPackageRoot = (...relative: string[]): string => resolve(PACKAGE_ROOT, ...relative);
