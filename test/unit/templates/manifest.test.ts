import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TemplateError } from '../../../lib/templates/errors.js';
import { DEFAULT_TEMPLATES_DIR, FileTemplateStore } from '../../../lib/templates/FileTemplateStore.js';
import {
  listRevisions,
  publishRevision,
  readManifest,
  revisionDigest,
  verifyManifest,
} from '../../../lib/templates/manifest.js';
import { copyBuiltIns, makeTemplatesDir, simpleSpec, writeRevision } from './revisionFixture.js';

const resetRequest = {
  templateId: 'password-reset',
  revision: 'v1',
  channel: 'sms' as const,
  data: { appName: 'Acme', resetUrl: 'https://play.example.com/reset', expiresInMinutes: 30 },
  secrets: { token: 'tok_manifest_test' },
};

describe('the committed manifest', () => {
  it('pins every built-in revision, and every pin matches the files (a copy change is a new revision)', () => {
    // Act
    const issues = verifyManifest(DEFAULT_TEMPLATES_DIR);

    // Assess: on failure the messages tell the author to restore the files and create a new revision.
    expect(issues.map((i) => i.message)).toEqual([]);
    expect(Object.keys(readManifest(DEFAULT_TEMPLATES_DIR)).sort()).toEqual([
      'health-report/v1',
      'password-reset/v1',
      'password-reset/v2',
      'receipt/v4',
      'receipt/v5',
    ]);
  });
});

describe('manifest verification on a copy of the templates', () => {
  let temp: ReturnType<typeof makeTemplatesDir>;
  beforeEach(() => {
    temp = makeTemplatesDir();
    copyBuiltIns(temp.dir);
  });
  afterEach(() => temp.remove());

  it('an untouched copy verifies clean (so the failures below are caused by the edits)', () => {
    // Act
    const issues = verifyManifest(temp.dir);

    // Assess
    expect(issues).toEqual([]);
    expect(listRevisions(temp.dir)).toHaveLength(5);
  });

  it('editing one file of a published revision fails the check and asks for a new revision', () => {
    // Prepare
    appendFileSync(join(temp.dir, 'password-reset', 'v1', 'email.txt'), 'P.S. a small copy change\n');

    // Act
    const issues = verifyManifest(temp.dir);

    // Assess
    expect(issues).toHaveLength(1);
    expect(issues[0]?.code).toBe('revision_changed');
    expect(issues[0]?.revision).toBe('password-reset/v1');
    expect(issues[0]?.message).toContain('immutable');
    expect(issues[0]?.message).toContain('new revision');
  });

  it('a whitespace-only edit still counts as a change', () => {
    // Prepare
    const path = join(temp.dir, 'receipt', 'v4', 'sms.txt');
    writeFileSync(path, readFileSync(path, 'utf8').replace('\n', '\r\n'));

    // Act
    const issues = verifyManifest(temp.dir);

    // Assess
    expect(issues.map((i) => [i.code, i.revision])).toEqual([['revision_changed', 'receipt/v4']]);
  });

  it('adding a locale folder to a published revision counts as a change', () => {
    // Prepare
    mkdirSync(join(temp.dir, 'health-report', 'v1', 'pt'));
    writeFileSync(
      join(temp.dir, 'health-report', 'v1', 'pt', 'sms.txt'),
      'Relatório pronto: {{portalUrl}}\n',
    );

    // Act
    const issues = verifyManifest(temp.dir);

    // Assess
    expect(issues.map((i) => [i.code, i.revision])).toEqual([['revision_changed', 'health-report/v1']]);
  });

  it('a published revision whose folder disappeared is reported', () => {
    // Prepare
    rmSync(join(temp.dir, 'receipt', 'v4'), { recursive: true });

    // Act
    const issues = verifyManifest(temp.dir);

    // Assess
    expect(issues.map((i) => [i.code, i.revision])).toEqual([['missing_revision', 'receipt/v4']]);
  });

  it('the store refuses to render a revision whose files no longer match the manifest', () => {
    // Prepare
    appendFileSync(join(temp.dir, 'password-reset', 'v1', 'sms.txt'), ' (edited)\n');
    const store = new FileTemplateStore(temp.dir);

    // Act
    const act = () => store.render(resetRequest);

    // Assess
    expect(act).toThrow(TemplateError);
    expect(act).toThrow(/changed after it was published/);
  });
});

describe('publishRevision', () => {
  let temp: ReturnType<typeof makeTemplatesDir>;
  beforeEach(() => {
    temp = makeTemplatesDir();
  });
  afterEach(() => temp.remove());

  it('pins a new revision with the digest of its files', () => {
    // Prepare
    writeRevision(temp.dir, 'greeting', 'r1', simpleSpec({ publish: false }));

    // Act
    const digest = publishRevision(temp.dir, 'greeting', 'r1');

    // Assess
    expect(readManifest(temp.dir)).toEqual({ 'greeting/r1': digest });
    expect(digest).toBe(revisionDigest(join(temp.dir, 'greeting', 'r1')));
    expect(verifyManifest(temp.dir)).toEqual([]);
  });

  it('never overwrites a published revision after its files change', () => {
    // Prepare
    writeRevision(temp.dir, 'greeting', 'r1', simpleSpec());
    const before = readManifest(temp.dir);
    appendFileSync(join(temp.dir, 'greeting', 'r1', 'sms.txt'), 'more\n');

    // Act
    const act = () => publishRevision(temp.dir, 'greeting', 'r1');

    // Assess
    expect(act).toThrow(/immutable/);
    expect(readManifest(temp.dir)).toEqual(before);
  });

  it('an unpublished revision cannot be rendered for sending, but can be previewed', () => {
    // Prepare
    writeRevision(temp.dir, 'greeting', 'r1', simpleSpec({ publish: false }));
    const request = {
      templateId: 'greeting',
      revision: 'r1',
      channel: 'sms' as const,
      data: { name: 'Bia' },
      secrets: { code: '4242' },
    };

    // Act
    const refused = () => new FileTemplateStore(temp.dir).render(request);
    const preview = new FileTemplateStore(temp.dir, { requirePublished: false }).render(request);

    // Assess
    expect(refused).toThrow(/not in manifest.json/);
    expect(preview.content.text).toBe('Code 4242 for Bia');
  });
});
