import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunctionProps } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { fromRepoRoot } from './paths.js';

/**
 * `true` only in the built package: scripts/build.mjs (`--pack`) defines it when it compiles infra/, and
 * builds every `functions/<name>/index.ts` into `dist/lambda/<name>/index.mjs` with the same esbuild
 * options SendproofFunction gives NodejsFunction. From the repository's sources (tests, `npm run synth`)
 * it is undefined and the functions are bundled from source as before.
 */
declare const __SENDPROOF_PREBUNDLED__: boolean | undefined;
export const PREBUNDLED =
  typeof __SENDPROOF_PREBUNDLED__ !== 'undefined' && __SENDPROOF_PREBUNDLED__ === true;

/** A folder shipped next to a function's code: repository-relative (`templates`) or any absolute path. */
export interface BundleFolder {
  /** Repository-relative or absolute path of the folder to copy. */
  source: string;
  /** Its name below the bundle root (`LAMBDA_TASK_ROOT/<target>`). */
  target: string;
}

export const bundleFolder = (folder: string | BundleFolder): BundleFolder =>
  typeof folder === 'string' ? { source: folder, target: folder } : folder;

export const folderPath = (folder: BundleFolder): string =>
  isAbsolute(folder.source) ? folder.source : fromRepoRoot(folder.source);

/** `functions/<name>/index.ts` → `<name>`, the folder of its pre-built bundle under dist/lambda/. */
export const lambdaName = (entry: string): string => {
  const match = /^functions\/([A-Za-z0-9_-]+)\/index\.ts$/.exec(entry);
  if (!match?.[1])
    throw new Error(`SendproofFunction: entry must be functions/<name>/index.ts, got ${entry}`);
  return match[1];
};

const staged = new Map<string, string>();

/**
 * The pre-built bundle of one function as a Lambda asset. With extra folders (the dispatcher's templates),
 * bundle and folders are copied into one staging folder first; CDK fingerprints the asset by content, so
 * the same files always give the same asset.
 */
export const prebundledCode = (entry: string, folders: readonly BundleFolder[]): lambda.Code => {
  const bundle = fromRepoRoot(join('dist', 'lambda', lambdaName(entry)));
  if (!existsSync(join(bundle, 'index.mjs')))
    throw new Error(
      `sendproof: the pre-built Lambda bundle ${bundle}/index.mjs is missing; the package is incomplete`,
    );
  if (folders.length === 0) return lambda.Code.fromAsset(bundle);
  const key = JSON.stringify([bundle, folders.map((f) => [folderPath(f), f.target])]);
  let dir = staged.get(key);
  if (!dir) {
    dir = mkdtempSync(join(tmpdir(), 'sendproof-lambda-'));
    cpSync(bundle, dir, { recursive: true });
    for (const folder of folders) cpSync(folderPath(folder), join(dir, folder.target), { recursive: true });
    staged.set(key, dir);
  }
  return lambda.Code.fromAsset(dir);
};

/**
 * The same function as `new NodejsFunction(scope, id, props)`, on the pre-built bundle instead of bundling
 * `entry`: every setting but the bundling ones carries over, and the handler is `index.handler`.
 */
export const prebundledFunction = (
  scope: Construct,
  id: string,
  props: NodejsFunctionProps,
  entry: string,
  folders: readonly BundleFolder[],
): lambda.Function => {
  const {
    entry: _entry,
    handler: _handler,
    bundling: _bundling,
    depsLockFilePath: _lock,
    projectRoot: _root,
    awsSdkConnectionReuse: _reuse,
    ...settings
  } = props;
  return new lambda.Function(scope, id, {
    ...settings,
    runtime: props.runtime ?? lambda.Runtime.NODEJS_24_X,
    handler: 'index.handler',
    code: prebundledCode(entry, folders),
  });
};
