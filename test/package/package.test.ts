import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '../../lib/aws/clients.js';
import { startFauxqs } from '../../lib/local/queues.js';
import { consumerLockfile, sha512Integrity } from './consumerLock.js';

/**
 * The package as another team gets it: `npm pack` once, then two fresh projects in a temporary folder
 * install the tarball with `npm ci --offline` (see consumerLock.ts: every dependency comes from npm's
 * cache, no registry) — a CDK app that puts NotificationLedger in its own stack and synthesizes it, and a
 * service that publishes intents from plain JavaScript. Neither has TypeScript, tsx, esbuild or Docker.
 * Their code is test/package/consumer/*.mjs, which docs/install.md quotes.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONSUMER = fileURLToPath(new URL('./consumer/', import.meta.url));
const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const repoLock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
const versionOf = (name: string): string => pkg.dependencies[name] ?? pkg.devDependencies[name];

/** The consumer processes' environment: nothing of this repository's, and no way to run Docker. */
const consumerEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const { NODE_OPTIONS: _options, NODE_PATH: _path, VITEST: _vitest, ...env } = process.env;
  return { ...env, CDK_DOCKER: '/bin/false', CDK_DISABLE_CLI_TELEMETRY: 'true', ...extra };
};

// biome-ignore lint/suspicious/noExplicitAny: a synthesized CloudFormation resource, read by the assertions
type CfnResource = { Type: string; Properties: any };

let work: string;
const timings: Record<string, number> = {};
const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
  const started = Date.now();
  try {
    return await fn();
  } finally {
    timings[name] = Date.now() - started;
  }
};

/** A fresh project folder with the consumer files, installed from the tarball by `npm ci --offline`. */
const installProject = async (name: string, dependencies: Record<string, string>, tarball: string) => {
  const dir = join(work, name);
  mkdirSync(dir);
  cpSync(CONSUMER, dir, { recursive: true });
  const tarballSpec = `file:../${tarball}`;
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name,
      private: true,
      type: 'module',
      dependencies: { ...dependencies, sendproof: tarballSpec },
    }),
  );
  const lock = consumerLockfile({
    repoLock,
    consumerName: name,
    tarballSpec,
    tarballIntegrity: sha512Integrity(join(work, tarball)),
    packed: pkg,
    dependencies,
  });
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(lock, null, 2));
  await run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
    env: consumerEnv(),
  });
  // The team pins its template revision with the installed CLI (compiled JavaScript; there is no tsx here).
  await run(
    join(dir, 'node_modules', '.bin', 'sendproof'),
    ['template', '--templates-dir', 'templates', 'publish', 'order-shipped', 'v1'],
    { cwd: dir, env: consumerEnv() },
  );
  return dir;
};

let cdkApp: string;
let service: string;
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sendproof-consumers-'));
  // `npm pack` runs `prepare`, which builds the package (types and Lambda bundles included) first.
  await timed('pack', () =>
    run('npm', ['pack', '--pack-destination', work, '--loglevel=error'], { cwd: ROOT }),
  );
  const tarball = `${pkg.name}-${pkg.version}.tgz`;
  expect(existsSync(join(work, tarball))).toBe(true);
  [cdkApp, service] = await timed('install', () =>
    Promise.all([
      installProject(
        'cdk-app',
        { 'aws-cdk-lib': versionOf('aws-cdk-lib'), constructs: versionOf('constructs') },
        tarball,
      ),
      installProject('service', { '@aws-sdk/client-sqs': versionOf('@aws-sdk/client-sqs') }, tarball),
    ]),
  );
}, 600_000);

afterAll(async () => {
  console.log(
    `package consumers: ${Object.entries(timings)
      .map(([k, v]) => `${k} ${v} ms`)
      .join(' · ')}`,
  );
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe('the packed package, installed by other teams', () => {
  it('ships its own declarations and pre-built Lambdas, and needs no build tool in the consumer', () => {
    const installed = join(cdkApp, 'node_modules', 'sendproof');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(manifest.private).toBeUndefined();
    for (const [entry, target] of Object.entries(manifest.exports as Record<string, unknown>)) {
      const files = typeof target === 'string' ? [target] : Object.values(target as Record<string, string>);
      for (const file of files) expect(existsSync(join(installed, file)), `${entry} → ${file}`).toBe(true);
    }
    for (const fn of ['dispatch', 'reconcile', 'evidence', 'archive'])
      expect(existsSync(join(installed, 'dist', 'lambda', fn, 'index.mjs')), fn).toBe(true);
    for (const tool of ['esbuild', 'typescript', 'tsx'])
      expect(existsSync(join(cdkApp, 'node_modules', tool)), tool).toBe(false);
    // A publishing service does not get the CDK: the construct's peers are optional.
    expect(existsSync(join(service, 'node_modules', 'aws-cdk-lib'))).toBe(false);
  });

  it('puts NotificationLedger in the consumer’s own stack with its own props and synthesizes it', async () => {
    // Act
    await timed('synth', () =>
      run(process.execPath, ['app.mjs'], { cwd: cdkApp, env: consumerEnv({ CDK_OUTDIR: 'cdk.out' }) }),
    );
    // Assess
    const outDir = join(cdkApp, 'cdk.out');
    const template = JSON.parse(readFileSync(join(outDir, 'ShopNotifications.template.json'), 'utf8'));
    const resources = Object.entries(template.Resources as Record<string, CfnResource>);
    const ofType = (type: string) => resources.filter(([, r]) => r.Type === type);
    const functions = ofType('AWS::Lambda::Function');
    // dispatch, reconcile, evidence, webhook, archive, archive maintenance, console, outcomes, slo-audit
    expect(functions).toHaveLength(9);
    for (const [, fn] of functions)
      expect(fn.Properties).toMatchObject({
        Handler: 'index.handler',
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
      });
    // Its own props: the alarm topic it passed (none created), its purpose, its concurrency.
    const [onCallId] = ofType('AWS::SNS::Topic').find(([id]) => id.startsWith('OnCall')) ?? [];
    expect(ofType('AWS::SNS::Topic').filter(([id]) => id.includes('AlarmTopic'))).toHaveLength(0);
    const alarms = ofType('AWS::CloudWatch::Alarm');
    expect(alarms.length).toBeGreaterThan(0);
    // A burn-rate window alarm notifies through its composite (both windows must burn), never alone.
    const composites = ofType('AWS::CloudWatch::CompositeAlarm');
    expect(composites.length).toBeGreaterThan(0);
    for (const [, composite] of composites)
      expect(composite.Properties.AlarmActions).toEqual([{ Ref: onCallId }]);
    const inComposite = (id: string) =>
      composites.some(([, c]) => JSON.stringify(c.Properties.AlarmRule).includes(`"${id}"`));
    for (const [id, alarm] of alarms)
      if (inComposite(id)) expect(alarm.Properties.AlarmActions).toBeUndefined();
      else expect(alarm.Properties.AlarmActions).toEqual([{ Ref: onCallId }]);
    const [dispatcherId] = functions.find(([id]) => id.includes('Dispatch'))!;
    const mappings = ofType('AWS::Lambda::EventSourceMapping').filter(
      ([, m]) => m.Properties.FunctionName.Ref === dispatcherId,
    );
    expect(mappings.map(([, m]) => m.Properties.ScalingConfig)).toEqual([{ MaximumConcurrency: 4 }]);
    const [, dispatcher] = functions.find(([id]) => id.includes('Dispatch'))!;
    expect(JSON.parse(dispatcher.Properties.Environment.Variables.SENDPROOF_PURPOSES)).toMatchObject([
      { purpose: 'order-shipped' },
    ]);
    // Its own role next to the construct may send to the intake queue.
    const policies = ofType('AWS::IAM::Policy').filter(([id]) => id.startsWith('OrderService'));
    expect(JSON.stringify(policies)).toContain('sqs:SendMessage');
    // The dispatcher's asset is the pre-built bundle plus the consumer's templates.
    const dispatchAsset = readdirSync(outDir).find((d) =>
      existsSync(join(outDir, d, 'templates', 'order-shipped')),
    );
    expect(dispatcher.Properties.Code.S3Key).toBe(`${dispatchAsset?.replace(/^asset\./, '')}.zip`);
    const assetDir = join(outDir, dispatchAsset ?? '-');
    // The entry, the chunks code splitting loads on demand (scripts/lambdaBundle.mjs), their maps.
    const files = readdirSync(assetDir).sort();
    expect(files).toEqual(expect.arrayContaining(['index.mjs', 'index.mjs.map', 'templates']));
    expect(files.filter((f) => f !== 'templates' && !/\.mjs(\.map)?$/.test(f))).toEqual([]);
    expect(readdirSync(join(assetDir, 'templates')).sort()).toEqual(['manifest.json', 'order-shipped']);
  }, 300_000);

  it('publishes an intent from plain JavaScript to a local queue, and refuses a bad one before the queue', async () => {
    // Prepare: the local queue (fauxqs, real SQS API)
    const fauxqs = await startFauxqs();
    try {
      const endpoint = fauxqs.endpoint;
      const sqs = sqsClient({ region: 'us-east-1', endpoint });
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'shop-notifications' }));
      // Act
      const { stdout } = await run(process.execPath, ['publish.mjs'], {
        cwd: service,
        env: consumerEnv({
          NOTIFICATIONS_QUEUE_URL: QueueUrl!,
          SQS_ENDPOINT: endpoint,
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
        }),
      });
      // Assess
      const results = JSON.parse(stdout.trim().split('\n').at(-1)!);
      expect(results).toMatchObject([
        {
          index: 0,
          ok: true,
          dedupeKeys: [
            'shop:order-shipped:shipment-5512:customer-881:email',
            'shop:order-shipped:shipment-5512:customer-881:sms',
          ],
        },
        { index: 1, ok: false, stage: 'validation', issues: [{ field: 'recipient.email' }] },
        {
          index: 2,
          ok: false,
          stage: 'validation',
          issues: [
            {
              field: 'data.trackingUrl',
              message: 'is a variable of template order-shipped/v1 and is missing',
            },
          ],
        },
      ]);
      const received = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      expect(received.Messages).toHaveLength(1);
      expect(received.Messages![0]!.MessageId).toBe(results[0].messageId);
      expect(JSON.parse(received.Messages![0]!.Body!)).toMatchObject({
        version: 1,
        eventId: 'shipment-5512',
        template: { id: 'order-shipped', revision: 'v1' },
      });
    } finally {
      await fauxqs.stop();
    }
  }, 120_000);
});
