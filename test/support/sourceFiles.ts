import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PACKAGE_ROOT } from '../../lib/packageRoot.js';

/** Every .ts file below the given package folders, as paths relative to the package root, sorted. */
export const sourceFiles = (...dirs: string[]): string[] => {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts')) files.push(relative(PACKAGE_ROOT, path));
    }
  };
  for (const dir of dirs) walk(join(PACKAGE_ROOT, dir));
  return files.sort();
};
