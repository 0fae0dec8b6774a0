import type { BuildOptions, BuildResult } from 'esbuild';

/** See scripts/lambdaBundle.mjs. */
export declare const LAMBDA_ESBUILD_OPTIONS: Readonly<{
  bundle: true;
  format: 'esm';
  platform: 'node';
  target: 'node24';
  mainFields: readonly string[];
  minify: true;
  sourcemap: true;
  sourcesContent: false;
  splitting: true;
  outExtension: { '.js': '.mjs' };
  chunkNames: string;
  banner: { js: string };
}>;

export declare const bundleLambda: <T extends BuildOptions = BuildOptions>(
  entry: string,
  outdir: string,
  extra?: T,
) => Promise<BuildResult<T>>;
