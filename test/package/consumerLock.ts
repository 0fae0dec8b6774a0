import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** The parts of a lockfile v3 package entry this module reads. */
interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
  [key: string]: unknown;
}

interface Lockfile {
  name?: string;
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
}

/** The folder one level up in node_modules nesting: `node_modules/a/node_modules/b` → `node_modules/a`. */
const parentOf = (path: string): string =>
  path.slice(0, path.lastIndexOf('node_modules/')).replace(/\/$/, '');

/** Node's lookup from the package at `from` (`''` is the project root) for `name`, in lockfile paths. */
const resolveIn = (packages: Lockfile['packages'], from: string, name: string): string | undefined => {
  let dir = from;
  for (;;) {
    const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (dir === '') return undefined;
    dir = parentOf(dir);
  }
};

export const sha512Integrity = (file: string): string =>
  `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;

/**
 * A consumer project's package-lock.json for installing the packed tarball with `npm ci --offline`: the
 * tarball itself, plus every package it (and the consumer's own `dependencies`) needs at the versions,
 * positions and integrities this repository's lockfile already holds, so npm reads them all from its
 * cache (the repository's own `npm ci` put them there) and contacts no registry. A package missing from
 * the closure makes the consumer's import fail, so the consumer tests also check this walk.
 */
export const consumerLockfile = (options: {
  repoLock: Lockfile;
  consumerName: string;
  /** `file:` spec of the tarball relative to the consumer folder, e.g. `file:../sendproof-0.1.0.tgz`. */
  tarballSpec: string;
  tarballIntegrity: string;
  /** The packed package.json. */
  packed: { name: string; version: string; dependencies?: Record<string, string>; [key: string]: unknown };
  /** The consumer's other dependencies (name → exact version), taken from the repository's lockfile. */
  dependencies: Record<string, string>;
}): Lockfile => {
  const { repoLock, packed } = options;
  const source = repoLock.packages;
  const selected = new Map<string, LockEntry>();
  const visit = (from: string, name: string, optional: boolean): void => {
    const path = resolveIn(source, from, name);
    if (!path) {
      if (optional) return; // a platform-specific optional dependency this machine never installed
      throw new Error(`${name} (needed by ${from || 'the consumer'}) is not in the repository lockfile`);
    }
    if (selected.has(path)) return;
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = source[path]!;
    selected.set(path, entry);
    for (const dep of Object.keys(entry.dependencies ?? {})) visit(path, dep, false);
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) visit(path, dep, true);
    for (const dep of Object.keys(entry.peerDependencies ?? {})) visit(path, dep, true);
  };
  // The tarball lands at node_modules/<name>; its dependencies resolve from there up to the root.
  const packedPath = `node_modules/${packed.name}`;
  for (const dep of Object.keys(packed.dependencies ?? {})) visit(packedPath, dep, false);
  for (const [dep, version] of Object.entries(options.dependencies)) {
    visit('', dep, false);
    const found = selected.get(`node_modules/${dep}`);
    if (found?.version !== version)
      throw new Error(`${dep}@${version}: the repository lockfile has ${found?.version ?? 'no'} ${dep}`);
  }
  const { name, version, dependencies, peerDependencies, peerDependenciesMeta, bin, engines, license } =
    packed;
  return {
    name: options.consumerName,
    lockfileVersion: 3,
    packages: {
      '': {
        name: options.consumerName,
        dependencies: { ...options.dependencies, [name]: options.tarballSpec },
      },
      [packedPath]: {
        version,
        resolved: options.tarballSpec,
        integrity: options.tarballIntegrity,
        ...(license ? { license } : {}),
        ...(dependencies ? { dependencies } : {}),
        ...(bin ? { bin } : {}),
        ...(engines ? { engines } : {}),
        ...(peerDependencies ? { peerDependencies } : {}),
        ...(peerDependenciesMeta ? { peerDependenciesMeta } : {}),
      } as LockEntry,
      ...Object.fromEntries([...selected].sort(([a], [b]) => a.localeCompare(b))),
    },
  };
};
