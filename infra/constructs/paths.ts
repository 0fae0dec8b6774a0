import { fromPackageRoot } from '../../lib/packageRoot.js';

/** The repository root (or the installed package's root), so synth works from any working directory. */
export const fromRepoRoot = (relative: string): string => fromPackageRoot(relative);
