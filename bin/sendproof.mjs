#!/usr/bin/env node
// `sendproof`: runs the compiled CLI (dist/bin/sendproof.mjs, built by `npm run build`, which `prepare`
// runs on every `npm ci`/`npm install`). In a clone whose TypeScript sources are newer than the build (you
// edited lib/ or cli/ since), or with no build at all, it runs the sources through tsx instead, so the
// command never runs stale code. SENDPROOF_FROM_SOURCE=1 forces the sources.
import { existsSync, readdirSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const compiled = new URL('dist/bin/sendproof.mjs', root);
const stamp = new URL('dist/BUILD', root);

/** Newest modification time of any .ts file below `dir` (0 when the folder does not exist, as in a package). */
const newestSource = (dir) => {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const mtime = statSync(`${entry.parentPath}/${entry.name}`).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
};

const useCompiled = () => {
  if (process.env.SENDPROOF_FROM_SOURCE === '1' || !existsSync(compiled) || !existsSync(stamp)) return false;
  const built = statSync(stamp).mtimeMs;
  return ['lib', 'cli'].every((dir) => newestSource(new URL(`${dir}/`, root)) <= built);
};

if (useCompiled()) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('cli/main.ts', root).href);
}
