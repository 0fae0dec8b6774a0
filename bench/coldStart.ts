import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Metafile } from 'esbuild';
import { ENV } from '../lib/config.js';
import { bundleLambda, LAMBDA_ESBUILD_OPTIONS } from '../scripts/lambdaBundle.mjs';
import type { BundleRow, ColdStartResult, PackageBytes } from './results.js';
import { BENCH_CONTENT_HASH_KEY, REPO_ROOT } from './stack.js';
import { median } from './stats.js';

/**
 * The bundles are built by scripts/lambdaBundle.mjs, the bundler SendproofFunction's synth and the
 * package build run too (`bundleAwsSDK: true` there, so `@aws-sdk/*` is bundled here as well).
 */
export { LAMBDA_ESBUILD_OPTIONS };

/** The output files a cold start reads: the entry and every chunk it imports statically, transitively. */
export const modulePath = (metafile: Metafile, outDir: string): Set<string> => {
  const outputs = metafile.outputs;
  const entry = Object.keys(outputs).find(
    (file) =>
      outputs[file]!.entryPoint !== undefined &&
      file.endsWith(`${relative(process.cwd(), outDir)}/index.mjs`),
  );
  const seen = new Set<string>();
  const stack = entry ? [entry] : [];
  while (stack.length) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const dep of outputs[file]!.imports)
      if (dep.kind === 'import-statement' && !dep.external) stack.push(dep.path);
  }
  return seen;
};

/** `node_modules/@aws-sdk/client-s3/…` → `@aws-sdk/client-s3`; `lib/dispatch/…` → `lib/dispatch`. */
export const packageOf = (input: string): string => {
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (dep) return dep[1]!;
  const parts = input.split('/');
  return parts.length > 2 ? parts.slice(0, 2).join('/') : input;
};

/** Bytes per package in the minified output, split by module path and on-demand chunks. */
export const packageBytes = (metafile: Metafile, onPath: ReadonlySet<string>): PackageBytes[] => {
  const byName = new Map<string, PackageBytes>();
  for (const [file, output] of Object.entries(metafile.outputs)) {
    if (!file.endsWith('.mjs')) continue;
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const name = packageOf(input);
      const row = byName.get(name) ?? { name, modulePathBytes: 0, onDemandBytes: 0 };
      if (onPath.has(file)) row.modulePathBytes += bytesInOutput;
      else row.onDemandBytes += bytesInOutput;
      byName.set(name, row);
    }
  }
  return [...byName.values()].sort(
    (a, b) => b.modulePathBytes - a.modulePathBytes || b.onDemandBytes - a.onDemandBytes,
  );
};

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
  [ENV.eventBusName]: 'bench-outcomes',
  [ENV.athenaWorkGroup]: 'bench-workgroup',
  [ENV.athenaDatabase]: 'bench_audit',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_LAMBDA_FUNCTION_NAME: 'sendproof-dispatch',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  POWERTOOLS_SERVICE_NAME: 'sendproof',
  POWERTOOLS_METRICS_NAMESPACE: 'Sendproof',
  // The function's environment sets this (SendproofFunction); source maps make module load slower.
  NODE_OPTIONS: sourceMaps ? '--enable-source-maps' : '',
});

/** Imports the bundle in a fresh `node` and reports how long the import (module init) took. */
const INIT_PROBE = [
  'const c0 = process.cpuUsage();',
  'const t0 = performance.now();',
  'await import(process.argv[1]);',
  'const t1 = performance.now();',
  'const cpu = process.cpuUsage(c0);',
  'process.stdout.write(JSON.stringify({ initMs: t1 - t0, cpuMs: (cpu.user + cpu.system) / 1000 }));',
  'process.exit(0);',
].join('\n');

const probeInit = (bundle: string, sourceMaps: boolean): { initMs: number; cpuMs: number } => {
  const out = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', INIT_PROBE, pathToFileURL(bundle).href],
    { env: dispatcherEnv(sourceMaps), encoding: 'utf8', timeout: 60_000 },
  );
  if (out.status !== 0) throw new Error(`bundle failed to initialise: ${out.stderr.slice(0, 500)}`);
  return JSON.parse(out.stdout) as { initMs: number; cpuMs: number };
};
const measureInit = (bundle: string, sourceMaps: boolean): number => probeInit(bundle, sourceMaps).initMs;

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
    let dispatcherPackages: PackageBytes[] | undefined;
    const bundle = async (fn: string, sdkExternal: boolean): Promise<BundleRow | undefined> => {
      const dir = join(outDir, sdkExternal ? 'sdk-external' : 'sdk-bundled', fn);
      let metafile: Metafile;
      try {
        metafile = (
          await bundleLambda(join(functionsDir, fn, 'index.ts'), dir, {
            metafile: true,
            logLevel: 'silent',
            ...(sdkExternal ? { external: ['@aws-sdk/*'] } : {}),
          })
        ).metafile;
      } catch (error) {
        if (!sdkExternal)
          failures.push(`${fn}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
        return undefined;
      }
      const onPath = modulePath(metafile, dir);
      const code = [...onPath].map((file) => readFileSync(file));
      const all = Object.keys(metafile.outputs).filter((file) => file.endsWith('.mjs'));
      if (fn === 'dispatch' && !sdkExternal) dispatcherPackages = packageBytes(metafile, onPath);
      return {
        fn,
        entry: `functions/${fn}/index.ts`,
        bytes: code.reduce((sum, c) => sum + c.byteLength, 0),
        gzipBytes: code.reduce((sum, c) => sum + gzipSync(c).byteLength, 0),
        totalBytes: all.reduce((sum, file) => sum + metafile.outputs[file]!.bytes, 0),
        files: all.length,
      };
    };
    for (const fn of entries) {
      const bundled = await bundle(fn, false);
      const external = await bundle(fn, true);
      if (bundled) bundles.push(bundled);
      if (external) bundlesSdkExternal.push(external);
      if (bundled)
        progress(
          `cold start: bundled ${fn} (${(bundled.bytes / 1024).toFixed(0)} KiB on the module path, ${((bundled.totalBytes ?? 0) / 1024).toFixed(0)} KiB in ${bundled.files} files)`,
        );
    }
    if (dispatcherPackages)
      progress(
        `cold start: dispatcher module path by package (KiB): ${dispatcherPackages
          .filter((p) => p.modulePathBytes > 0)
          .slice(0, 12)
          .map((p) => `${p.name} ${(p.modulePathBytes / 1024).toFixed(1)}`)
          .join(', ')}`,
      );
    const dispatcher = join(outDir, 'sdk-bundled', 'dispatch', 'index.mjs');
    // The floor any DynamoDB-backed function pays: the SDK client and document client, same options.
    const referenceDir = join(outDir, 'reference');
    await bundleLambda(join(REPO_ROOT, 'bench', 'referenceEntry.ts'), referenceDir, { logLevel: 'silent' });
    const reference = join(referenceDir, 'index.mjs');
    const initMs: number[] = [];
    const initCpuMs: number[] = [];
    const withoutMaps: number[] = [];
    const referenceMs: number[] = [];
    const referenceCpuMs: number[] = [];
    if (existsSync(dispatcher)) {
      // Interleaved, so a burst of load on the shared machine hits all three series alike.
      for (let i = 0; i < runs; i++) {
        const d = probeInit(dispatcher, true);
        initMs.push(d.initMs);
        initCpuMs.push(d.cpuMs);
        withoutMaps.push(measureInit(dispatcher, false));
        const r = probeInit(reference, true);
        referenceMs.push(r.initMs);
        referenceCpuMs.push(r.cpuMs);
      }
      progress(
        `cold start: dispatcher init ${initMs.map((v) => v.toFixed(0)).join(', ')} ms, reference ${referenceMs.map((v) => v.toFixed(0)).join(', ')} ms; ratio of medians ${(median(initMs) / median(referenceMs)).toFixed(2)} (CPU ms ${(median(initCpuMs) / median(referenceCpuMs)).toFixed(2)})`,
      );
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
      dispatcherInitCpuMs: initCpuMs,
      referenceInitCpuMs: referenceCpuMs,
      ...(dispatcherPackages ? { dispatcherPackages } : {}),
      medianReferenceInitMs: referenceMs.length ? median(referenceMs) : Number.NaN,
      medianInitMs: initMs.length ? median(initMs) : Number.NaN,
      perFunction,
      note: notes.join(' '),
    };
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
};
