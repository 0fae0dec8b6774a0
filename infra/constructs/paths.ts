import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, found from this file so synth works from any working directory. */
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const fromRepoRoot = (relative: string): string => resolve(REPO_ROOT, relative);
