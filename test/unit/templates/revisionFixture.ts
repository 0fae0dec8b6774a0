import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DEFAULT_TEMPLATES_DIR } from '../../../lib/templates/FileTemplateStore.js';
import { publishRevision } from '../../../lib/templates/manifest.js';

/** A throwaway templates folder; tests build revisions in it instead of touching templates/. */
export const makeTemplatesDir = (): { dir: string; remove: () => void } => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-templates-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
};

export interface RevisionSpec {
  definition: Record<string, unknown>;
  /** Relative path → contents, e.g. `email.subject`, `pt/sms.txt`. */
  files: Record<string, string>;
  publish?: boolean;
}

export const writeRevision = (
  dir: string,
  templateId: string,
  revision: string,
  spec: RevisionSpec,
): void => {
  const root = join(dir, templateId, revision);
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, 'template.json'), JSON.stringify(spec.definition, null, 2));
  for (const [rel, text] of Object.entries(spec.files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  if (spec.publish ?? true) publishRevision(dir, templateId, revision);
};

/** Copies the built-in templates and the committed manifest, so a test can tamper with the copy. */
export const copyBuiltIns = (dir: string): void => {
  cpSync(DEFAULT_TEMPLATES_DIR, dir, { recursive: true });
};

/** A minimal valid email+sms template with one variable and one secret. */
export const simpleSpec = (overrides: Partial<RevisionSpec> = {}): RevisionSpec => ({
  definition: {
    owner: 'application',
    channels: ['email', 'sms'],
    variables: ['name'],
    secrets: ['code'],
    defaultLocale: 'en',
  },
  files: {
    'email.subject': 'Hello {{name}}\n',
    'email.txt': 'Your code is {{code}}, {{name}}.\n',
    'email.html': '<p>Your code is {{code}}, {{name}}.</p>\n',
    'sms.txt': 'Code {{code}} for {{name}}\n',
  },
  ...overrides,
});
