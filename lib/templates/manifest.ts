import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFINITION_FILE } from './definition.js';
import { TemplateError } from './errors.js';

/**
 * `templates/manifest.json` pins every published revision to a digest of its files. Published revisions
 * are immutable: a copy change is a new revision, so a dedupe key or content hash recorded months ago
 * still points at the exact words that were sent.
 */
export const MANIFEST_FILE = 'manifest.json';

/** `<id>/<revision>` → digest (64 hex). */
export type Manifest = Record<string, string>;

/** Every file below `dir`, as sorted `/`-separated relative paths. */
const listFiles = (dir: string, prefix = ''): string[] =>
  readdirSync(join(dir, prefix), { withFileTypes: true })
    .flatMap((entry) => {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) return listFiles(dir, rel);
      return entry.isFile() ? [rel] : [];
    })
    .sort();

/**
 * SHA-256 over the revision's files in sorted path order, each as `path NUL byteLength NUL bytes`. The
 * length prefix keeps the framing unambiguous; bytes are hashed as stored (no newline normalisation), so
 * any edit at all is a change.
 */
export const revisionDigest = (revisionDir: string): string => {
  const hash = createHash('sha256');
  for (const rel of listFiles(revisionDir)) {
    const bytes = readFileSync(join(revisionDir, rel));
    hash.update(`${rel}\0${bytes.length}\0`, 'utf8');
    hash.update(bytes);
  }
  return hash.digest('hex');
};

export const revisionKey = (templateId: string, revision: string): string => `${templateId}/${revision}`;

export const readManifest = (templatesDir: string): Manifest => {
  const path = join(templatesDir, MANIFEST_FILE);
  if (!existsSync(path)) return {};
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new TemplateError('invalid_definition', `${MANIFEST_FILE} must be a JSON object`);
  for (const [key, value] of Object.entries(parsed))
    if (typeof value !== 'string' || !/^[a-f0-9]{64}$/.test(value))
      throw new TemplateError(
        'invalid_definition',
        `${MANIFEST_FILE}: ${key} must map to a sha256 hex digest`,
      );
  return parsed as Manifest;
};

const writeManifest = (templatesDir: string, manifest: Manifest): void => {
  const sorted = Object.fromEntries(Object.entries(manifest).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(join(templatesDir, MANIFEST_FILE), `${JSON.stringify(sorted, null, 2)}\n`);
};

/** Every `<id>/<revision>` folder holding a template.json. */
export const listRevisions = (templatesDir: string): Array<{ templateId: string; revision: string }> => {
  if (!existsSync(templatesDir)) return [];
  const found: Array<{ templateId: string; revision: string }> = [];
  for (const id of readdirSync(templatesDir).sort()) {
    const idDir = join(templatesDir, id);
    if (!statSync(idDir).isDirectory()) continue;
    for (const revision of readdirSync(idDir).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))) {
      if (existsSync(join(idDir, revision, DEFINITION_FILE))) found.push({ templateId: id, revision });
    }
  }
  return found;
};

export type ManifestIssueCode = 'revision_changed' | 'unpublished_revision' | 'missing_revision';

export interface ManifestIssue {
  code: ManifestIssueCode;
  revision: string;
  message: string;
}

export const changedMessage = (key: string, expected: string, actual: string): string =>
  `${key} changed after it was published (manifest ${expected.slice(0, 12)}…, files now ${actual.slice(0, 12)}…). ` +
  'Published revisions are immutable: restore its files and put the copy change in a new revision folder, ' +
  'then run `sendproof template publish <id> <new-revision>`.';

/** Recomputes every revision's digest and compares it with the manifest, in both directions. */
export const verifyManifest = (templatesDir: string): ManifestIssue[] => {
  const manifest = readManifest(templatesDir);
  const issues: ManifestIssue[] = [];
  const present = new Set<string>();
  for (const { templateId, revision } of listRevisions(templatesDir)) {
    const key = revisionKey(templateId, revision);
    present.add(key);
    const actual = revisionDigest(join(templatesDir, templateId, revision));
    const expected = manifest[key];
    if (expected === undefined)
      issues.push({
        code: 'unpublished_revision',
        revision: key,
        message: `${key} is not in ${MANIFEST_FILE}; run \`sendproof template publish ${templateId} ${revision}\` once its copy is final.`,
      });
    else if (expected !== actual)
      issues.push({
        code: 'revision_changed',
        revision: key,
        message: changedMessage(key, expected, actual),
      });
  }
  for (const key of Object.keys(manifest))
    if (!present.has(key))
      issues.push({
        code: 'missing_revision',
        revision: key,
        message: `${key} is published in ${MANIFEST_FILE} but its folder is gone; published revisions are never deleted.`,
      });
  return issues;
};

/**
 * Adds a new revision to the manifest. Refuses to overwrite an entry: re-publishing a changed revision is
 * exactly the edit the manifest exists to stop.
 */
export const publishRevision = (templatesDir: string, templateId: string, revision: string): string => {
  const key = revisionKey(templateId, revision);
  const dir = join(templatesDir, templateId, revision);
  if (!existsSync(join(dir, DEFINITION_FILE)))
    throw new TemplateError('unknown_revision', `${key} has no ${DEFINITION_FILE}`);
  const manifest = readManifest(templatesDir);
  const digest = revisionDigest(dir);
  const existing = manifest[key];
  if (existing === digest) return digest;
  if (existing !== undefined)
    throw new TemplateError('revision_changed', changedMessage(key, existing, digest));
  writeManifest(templatesDir, { ...manifest, [key]: digest });
  return digest;
};
