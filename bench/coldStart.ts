import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { ENV } from '../lib/config.js';
import type { BundleRow, ColdStartResult } from './results.js';
import { BENCH_CONTENT_HASH_KEY, REPO_ROOT } from './stack.js';
import { median } from './stats.js';

/**
 * The options infra/constructs/SendproofFunction.ts gives NodejsFunction, as esbuild sees them.
 * `bundleAwsSDK: true` there, so `@aws-sdk/*` is bundled here too (not external).
 */
export const LAMBDA_ESBUILD_OPTIONS = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  minify: true,
  sourcemap: true,
  mainFields: ['module', 'main'],
  banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
} as const;

/** The environment the dispatcher reads at init (lib/config.ts), pointing at nothing it will contact. */
const dispatcherEnv = (sourceMaps: boolean): Record<string, string> => ({
  [ENV.ledgerTable]: 'bench-ledger',
  [ENV.suppressionTable]: 'bench-suppression',
  [ENV.contentHashKey]: BENCH_CONTENT_HASH_KEY,
  [ENV.emailTransport]: 'simulator',
  [ENV.smsTransport]: 'simulator',
  [ENV.restBaseUrl]: 'http://127.0.0.1:9',
  [ENV.templatesDir]: join(REPO_ROOT, 'templates'),
  [ENV.region]: 'us-east-1',
  // As deployed: intents are sealed with a KMS key (the keyring is built at init, KMS is called per seal).
  [ENV.sealKeyArn]: 'arn:aws:kms:us-east-1:111122223333:key/00000000-0000-0000-0000-000000000000',
  // The other functions' required settings (lib/config.ts FUNCTION_SETTINGS), pointing at nothing.
  [ENV.queueUrl]: 'http://127.0.0.1:9/000000000000/intake',
  [ENV.archiveBucket]: 'bench-archive',
  [ENV.archiveFailuresUrl]: 'http://127.0.0.1:9/000000000000/archive-failures',
  [ENV.digestKeyId]: 'arn:aws:kms:us-east-1:111122223333:key/00000000-0000-0000-0000-000000000001',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_LAMBDA_FUNCTION_NAME: 'sendproof-dispatch',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  POWERTOOLS_SERVICE_NAME: 'sendproof',
  POWERTOOLS_METRICS_NAMESPACE: 'Sendproof',
  // The function's environment sets this (SendproofFunction); source maps make module load slower.
  NODE_OPTIONS: sourceMaps ? '--enable-source-maps' : '',
});

const REFERENCE_ENTRY = [
  "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
  "import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';",
  'export const client = DynamoDBDocumentClient.from(new DynamoDBClient({}));',
].join('\n');

/** Imports the bundle in a fresh `node` and reports how long the import (module init) took. */
const INIT_PROBE = [
  'const t0 = performance.now();',
  'await import(process.argv[1]);',
  'const t1 = performance.now();',
  'process.stdout.write(JSON.stringify({ initMs: t1 - t0 }));',
  'process.exit(0);',
].join('\n');

const measureInit = (bundle: string, sourceMaps: boolean): number => {
  const out = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', INIT_PROBE, pathToFileURL(bundle).href],
    { env: dispatcherEnv(sourceMaps), encoding: 'utf8', timeout: 60_000 },
  );
  if (out.status !== 0) throw new Error(`bundle failed to initialise: ${out.stderr.slice(0, 500)}`);
  return (JSON.parse(out.stdout) as { initMs: number }).initMs;
};

export const measureColdStart = async (
  runs: number,
  progress: (line: string) => void,
): Promise<ColdStartResult> => {
  const outDir = mkdtempSync(join(tmpdir(), 'sendproof-bench-bundles-'));
  try {
    const functionsDir = join(REPO_ROOT, 'functions');
    const entries = readdirSync(functionsDir)
      .filter((name) => existsSync(join(functionsDir, name, 'index.ts')))
      .sort();
    const bundles: BundleRow[] = [];
    const bundlesSdkExternal: BundleRow[] = [];
    const failures: string[] = [];
    const bundle = async (fn: string, sdkExternal: boolean): Promise<BundleRow | undefined> => {
      const outfile = join(outDir, sdkExternal ? 'sdk-external' : 'sdk-bundled', fn, 'index.mjs');
      try {
        await build({
          ...LAMBDA_ESBUILD_OPTIONS,
          mainFields: [...LAMBDA_ESBUILD_OPTIONS.mainFields],
          ...(sdkExternal ? { external: ['@aws-sdk/*'] } : {}),
          entryPoints: [join(functionsDir, fn, 'index.ts')],
          outfile,
          logLevel: 'silent',
        });
      } catch (error) {
        if (!sdkExternal)
          failures.push(`${fn}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
        return undefined;
      }
      const code = readFileSync(outfile);
      return {
        fn,
        entry: `functions/${fn}/index.ts`,
        bytes: code.byteLength,
        gzipBytes: gzipSync(code).byteLength,
      };
    };
    for (const fn of entries) {
      const bundled = await bundle(fn, false);
      const external = await bundle(fn, true);
      if (bundled) bundles.push(bundled);
      if (external) bundlesSdkExternal.push(external);
      if (bundled) progress(`cold start: bundled ${fn} (${(bundled.bytes / 1024).toFixed(0)} KiB)`);
    }
    const dispatcher = join(outDir, 'sdk-bundled', 'dispatch', 'index.mjs');
    // The floor any DynamoDB-backed function pays: the SDK client and document client, same options.
    const reference = join(outDir, 'reference', 'index.mjs');
    await build({
      ...LAMBDA_ESBUILD_OPTIONS,
      mainFields: [...LAMBDA_ESBUILD_OPTIONS.mainFields],
      stdin: { contents: REFERENCE_ENTRY, resolveDir: REPO_ROOT, loader: 'ts' },
      outfile: reference,
      logLevel: 'silent',
    });
    const initMs: number[] = [];
    const withoutMaps: number[] = [];
    const referenceMs: number[] = [];
    if (existsSync(dispatcher)) {
      // Interleaved, so a burst of load on the shared machine hits all three series alike.
      for (let i = 0; i < runs; i++) {
        initMs.push(measureInit(dispatcher, true));
        withoutMaps.push(measureInit(dispatcher, false));
        referenceMs.push(measureInit(reference, true));
      }
      progress(`cold start: dispatcher init ${initMs.map((v) => v.toFixed(0)).join(', ')} ms`);
    } else failures.push('dispatch: no bundle, init not measured');
    // Every other function, fewer runs each, interleaved with the reference as well.
    const perFunction: NonNullable<ColdStartResult['perFunction']> = [];
    for (const row of bundles) {
      const file = join(outDir, 'sdk-bundled', row.fn, 'index.mjs');
      if (row.fn === 'dispatch') {
        perFunction.push({
          fn: row.fn,
          medianInitMs: median(initMs),
          ratio: median(initMs) / median(referenceMs),
        });
        continue;
      }
      try {
        const fnMs: number[] = [];
        const refMs: number[] = [];
        for (let i = 0; i < Math.min(runs, 3); i++) {
          fnMs.push(measureInit(file, true));
          refMs.push(measureInit(reference, true));
        }
        perFunction.push({ fn: row.fn, medianInitMs: median(fnMs), ratio: median(fnMs) / median(refMs) });
      } catch (error) {
        perFunction.push({
          fn: row.fn,
          error: (error instanceof Error ? error.message : String(error)).slice(0, 160),
        });
      }
    }
    progress(
      `cold start per function: ${perFunction.map((f) => `${f.fn} ${f.ratio === undefined ? 'not measured' : `${f.ratio.toFixed(2)}×`}`).join(', ')}`,
    );
    const notes = [
      `Node ${process.version} here; Lambda runs node24 (the bundle's target).`,
      ...(withoutMaps.length
        ? [`Without --enable-source-maps: median ${median(withoutMaps).toFixed(1)} ms.`]
        : []),
      ...failures.map((f) => `Not bundled: ${f}.`),
    ];
    return {
      awsSdk: 'bundled',
      esbuild: { ...LAMBDA_ESBUILD_OPTIONS, banner: 'createRequire shim' },
      bundles,
      bundlesSdkExternal,
      dispatcherInitMs: initMs,
      referenceInitMs: referenceMs,
      medianReferenceInitMs: referenceMs.length ? median(referenceMs) : Number.NaN,
      medianInitMs: initMs.length ? median(initMs) : Number.NaN,
      perFunction,
      note: notes.join(' '),
    };
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
};
