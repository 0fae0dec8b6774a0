import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fromPackageRoot } from '../packageRoot.js';
import type { ConsoleResponse } from './http.js';

/**
 * The page's files: one HTML page, one script, one stylesheet. Nothing else is served. Found from the
 * package root, so the compiled CLI (dist/bin, one bundle) serves them as the sources do.
 */
export const STATIC_DIR = fromPackageRoot('lib', 'console', 'static');
export const STATIC_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console.js': { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  '/console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
};

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
      body: await readFile(join(dir, entry.file)),
    };
  },
});
