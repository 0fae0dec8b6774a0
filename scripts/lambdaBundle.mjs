#!/usr/bin/env node
// One Lambda bundle: functions/<name>/index.ts → <outdir>/index.mjs plus the chunks it loads on demand.
//
// The single definition of how a Sendproof function is bundled, used by all three places that bundle one:
//   - infra/constructs/SendproofFunction.ts (a source synth: NodejsFunction's afterBundling hook runs this
//     file as `node scripts/lambdaBundle.mjs <entry> <outdir>` and it replaces NodejsFunction's single file),
//   - scripts/build.mjs --pack (the pre-built bundles the installed package deploys),
//   - bench/coldStart.ts (what the cold start benchmark imports and measures).
//
// Why code splitting: a dynamic `import()` inside one single-file bundle keeps the module's code in that
// file, so V8 still reads and pre-parses it (and --enable-source-maps still parses its mappings) at every
// cold start. As separate chunks, the SES, SMS, S3, KMS/Encryption SDK and phone-number code is read only
// by the process that takes the path needing it (docs/benchmark.md, "Cold start").
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..');

/**
 * The named audit queries (queries/*.sql), embedded as text: a bundle has no package folder around it (in
 * Lambda its package root would be `/var`), and the console reads them at init when Athena is configured.
 * lib/archive/namedQueries.ts parses these texts exactly as it parses the files; only bundles that import
 * it carry them. Read at every bundle, so the bundle always holds the queries of the tree it was built from.
 */
export const embeddedNamedQueries = () => {
  const dir = join(ROOT, 'queries');
  return Object.fromEntries(
    readdirSync(dir)
      .filter((file) => file.endsWith('.sql'))
      .sort()
      .map((file) => [file, readFileSync(join(dir, file), 'utf8')]),
  );
};

/** esbuild options for every function (CDK's NodejsFunction names: format ESM, minify, sourceMap, target). */
export const LAMBDA_ESBUILD_OPTIONS = Object.freeze({
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  mainFields: ['module', 'main'],
  minify: true,
  // Stack traces are mapped (the function runs with --enable-source-maps); the sources themselves are not
  // embedded: the map was 7.5 MB for the dispatcher with them and Node parses it at every cold start.
  sourcemap: true,
  sourcesContent: false,
  splitting: true,
  outExtension: { '.js': '.mjs' },
  // Chunks beside index.mjs (not in a sub-folder), so import.meta.url means the same folder in every one.
  chunkNames: '[name]-[hash]',
  // ESM output still meets CommonJS dependencies that call require(); give every chunk one.
  banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
});

/**
 * Bundles one entry (repository-relative or absolute) into `outdir`, which should be a fresh folder (chunk
 * names carry a content hash, so an earlier build's chunks would linger beside the new ones). Extra esbuild
 * options (e.g. `external`, `metafile`) are merged over the defaults.
 */
export const bundleLambda = async (entry, outdir, extra = {}) =>
  esbuild.build({
    ...LAMBDA_ESBUILD_OPTIONS,
    mainFields: [...LAMBDA_ESBUILD_OPTIONS.mainFields],
    entryPoints: { index: isAbsolute(entry) ? entry : join(ROOT, entry) },
    outdir,
    logLevel: 'warning',
    ...extra,
    // One JSON string, not an object: esbuild makes an object-valued define a module every file imports,
    // which code splitting put on every function's module path (27 KiB) whether it reads the queries or not.
    // A string is inlined where lib/archive/namedQueries.ts reads it, so only the chunk that reads it has it.
    define: {
      __SENDPROOF_NAMED_QUERIES__: JSON.stringify(JSON.stringify(embeddedNamedQueries())),
      ...extra.define,
    },
  });

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [entry, outdir] = process.argv.slice(2);
  if (!entry || !outdir) {
    process.stderr.write('usage: node scripts/lambdaBundle.mjs functions/<name>/index.ts <outdir>\n');
    process.exit(2);
  }
  // The folder NodejsFunction bundled into holds only its index.mjs(.map): replace them with the split build.
  rmSync(join(outdir, 'index.mjs.map'), { force: true });
  await bundleLambda(entry, outdir);
}
