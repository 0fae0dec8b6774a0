import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fromPackageRoot } from '../packageRoot.js';
import type { ConsoleResponse } from './http.js';

/**
 * The page's files: one HTML page, its modules (one per concern, see static/js/), one stylesheet, and
 * the chart library (uPlot, from its npm package: served from the console's own origin, never a CDN).
 * Nothing else is served. Found from the package root, so the compiled CLI (dist/bin, one bundle) serves
 * them as the sources do.
 */
export const STATIC_DIR = fromPackageRoot('lib', 'console', 'static');

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
/** The page's own modules (static/js/*.js). */
export const PAGE_MODULES = [
  'api',
  'dom',
  'url',
  'chartData',
  'charts',
  'circuits',
  'overview',
  'lists',
  'operator',
  'timeline',
  'audit',
] as const;

export interface StaticEntry {
  /** Path of the file relative to STATIC_DIR, or (`npm`) a file of an installed package. */
  file: string;
  type: string;
  /** The file is in an npm package (resolved when served: the Lambda bundle never serves the page). */
  npm?: boolean;
}

export const STATIC_FILES: Readonly<Record<string, StaticEntry>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console.js': { file: 'console.js', type: JS },
  '/console.css': { file: 'console.css', type: CSS },
  ...Object.fromEntries(PAGE_MODULES.map((m) => [`/js/${m}.js`, { file: `js/${m}.js`, type: JS }])),
  // uPlot's browser build and stylesheet (MIT; docs/console.md says why this library).
  '/vendor/uPlot.iife.min.js': { file: 'uplot/dist/uPlot.iife.min.js', type: JS, npm: true },
  '/vendor/uPlot.min.css': { file: 'uplot/dist/uPlot.min.css', type: CSS, npm: true },
};

/** Where a served path's file is, and the key it has in the page bucket (AWS). */
export const staticFileOf = (entry: StaticEntry, dir: string = STATIC_DIR): string =>
  entry.npm ? createRequire(fromPackageRoot('package.json')).resolve(entry.file) : join(dir, entry.file);
export const bucketKeyOf = (path: string): string => (path === '/' ? 'index.html' : path.slice(1));

/**
 * Strict CSP: scripts and styles only from the console's own origin (no inline script, no eval), API
 * calls only to `connectSrc`, no frames, no forms, no plugins. Every value on the page is set with
 * `textContent`, so a hostile string in the ledger stays text even without the policy.
 */
export const contentSecurityPolicy = (connectSrc = "'self'"): string =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    `connect-src ${connectSrc}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');

export const securityHeaders = (connectSrc?: string): Record<string, string> => ({
  'content-security-policy': contentSecurityPolicy(connectSrc),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
});

export interface StaticFiles {
  get(path: string): Promise<ConsoleResponse | undefined>;
}

/** Serves the allow-listed files, plus `/config.json` (what the page needs to know about its API). */
export const staticFilesFrom = (
  dir: string = STATIC_DIR,
  config: Record<string, unknown> = {},
): StaticFiles => ({
  async get(path) {
    if (path === '/config.json')
      return {
        status: 200,
        headers: { ...securityHeaders(), 'content-type': 'application/json; charset=utf-8' },
        body: JSON.stringify(config),
      };
    // Browsers ask for a favicon on their own; answer it without a file (and without a 404 in the log).
    if (path === '/favicon.ico') return { status: 204, headers: securityHeaders(), body: '' };
    const entry = STATIC_FILES[path];
    if (!entry) return undefined;
    return {
      status: 200,
      headers: { ...securityHeaders(), 'content-type': entry.type },
      body: await readFile(staticFileOf(entry, dir)),
    };
  },
});
