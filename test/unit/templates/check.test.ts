import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkRevision, checkTemplates } from '../../../lib/templates/check.js';
import { DEFAULT_TEMPLATES_DIR } from '../../../lib/templates/FileTemplateStore.js';
import { makeTemplatesDir, type RevisionSpec, simpleSpec, writeRevision } from './revisionFixture.js';

describe('template check on the built-in templates', () => {
  it('finds no issue in any built-in revision or in the manifest', () => {
    // Act
    const issues = checkTemplates(DEFAULT_TEMPLATES_DIR);

    // Assess
    expect(issues).toEqual([]);
  });
});

describe('template check on broken revisions', () => {
  let temp: ReturnType<typeof makeTemplatesDir>;
  beforeEach(() => {
    temp = makeTemplatesDir();
  });
  afterEach(() => temp.remove());

  const base = simpleSpec();
  const checkOf = (spec: RevisionSpec) => {
    writeRevision(temp.dir, 'fixture', 'r1', { ...spec, publish: false });
    return checkRevision(temp.dir, 'fixture', 'r1').map((i) => [i.code, i.message] as const);
  };

  it('a well-formed fixture passes (so each failure below comes from its one defect)', () => {
    // Act
    const issues = checkOf(base);

    // Assess
    expect(issues).toEqual([]);
  });

  it('a secret in the subject is a secret_outside_slot issue', () => {
    // Act
    const issues = checkOf({ ...base, files: { ...base.files, 'email.subject': 'Your code {{code}}' } });

    // Assess
    expect(issues).toEqual([
      ['secret_outside_slot', expect.stringContaining('secret code is used in the subject')],
    ]);
  });

  it('a secret used as a section is a secret_outside_slot issue', () => {
    // Act
    const issues = checkOf({
      ...base,
      files: { ...base.files, 'sms.txt': '{{#code}}Code {{code}}{{/code}} {{name}}' },
    });

    // Assess
    expect(issues).toEqual([['secret_outside_slot', expect.stringContaining('used as a section')]]);
  });

  it('a token declared as plain data (which is persisted) is a secret_outside_slot issue', () => {
    // Act
    const issues = checkOf({
      definition: { ...base.definition, variables: ['name', 'resetToken'] },
      files: { ...base.files, 'sms.txt': 'Code {{code}} for {{name}} {{resetToken}}' },
    });

    // Assess
    expect(issues).toEqual([
      ['secret_outside_slot', expect.stringContaining('resetToken looks like a secret')],
    ]);
  });

  it('a declared variable that no file uses is an unused_variable issue naming it', () => {
    // Act
    const issues = checkOf({ ...base, definition: { ...base.definition, variables: ['name', 'nickname'] } });

    // Assess
    expect(issues).toEqual([['unused_variable', 'variable nickname is declared but never used']]);
  });

  it('a declared list item field that no file uses is an unused_variable issue', () => {
    // Act
    const issues = checkOf({
      definition: { ...base.definition, variables: ['name', { name: 'lines', items: ['label', 'amount'] }] },
      files: { ...base.files, 'email.txt': 'Code {{code}}, {{name}}.\n{{#lines}}{{label}}\n{{/lines}}' },
    });

    // Assess
    expect(issues).toEqual([['unused_variable', 'item field lines.amount is declared but never used']]);
  });

  it('a variable used but not declared is an undeclared_variable issue naming it', () => {
    // Act
    const issues = checkOf({
      ...base,
      files: { ...base.files, 'email.txt': '{{code}} {{name}} {{surname}}' },
    });

    // Assess
    expect(issues).toEqual([['undeclared_variable', expect.stringContaining('uses surname')]]);
  });

  it('triple mustaches in the HTML body are an unescaped_html issue', () => {
    // Act
    const issues = checkOf({ ...base, files: { ...base.files, 'email.html': '<p>{{code}} {{{name}}}</p>' } });

    // Assess
    expect(issues.map(([code]) => code)).toEqual(['unescaped_html']);
  });

  it('partials are an unsupported_tag issue', () => {
    // Act
    const issues = checkOf({
      ...base,
      files: { ...base.files, 'email.txt': '{{code}} {{name}} {{> footer}}' },
    });

    // Assess
    expect(issues.map(([code]) => code)).toEqual(['unsupported_tag']);
  });

  it('an unclosed section is a syntax_error issue', () => {
    // Act
    const issues = checkOf({ ...base, files: { ...base.files, 'sms.txt': '{{code}} {{#name}}' } });

    // Assess
    expect(issues.map(([code]) => code)).toEqual(['syntax_error']);
  });

  it('a declared locale without its files is a missing_file issue per file', () => {
    // Act
    const issues = checkOf({
      definition: { ...base.definition, locales: ['pt'] },
      files: { ...base.files, 'pt/sms.txt': 'Codigo {{code}} {{name}}' },
    });

    // Assess
    expect(issues).toEqual([
      ['missing_file', 'pt/email.subject is missing'],
      ['missing_file', 'pt/email.txt is missing'],
      ['missing_file', 'pt/email.html is missing'],
    ]);
  });

  it('a file for an undeclared channel or locale is an unexpected_file issue', () => {
    // Act
    const issues = checkOf({ ...base, files: { ...base.files, 'es/sms.txt': 'Codigo {{code}} {{name}}' } });

    // Assess
    expect(issues.map(([code]) => code)).toEqual(['unexpected_file']);
  });

  it('an invalid template.json is an invalid_definition issue naming the field', () => {
    // Act
    const issues = checkOf({ ...base, definition: { ...base.definition, owner: 'marketing' } });

    // Assess
    expect(issues).toEqual([['invalid_definition', expect.stringContaining('owner')]]);
  });

  it('checkTemplates also reports a revision missing from the manifest', () => {
    // Prepare
    writeRevision(temp.dir, 'fixture', 'r1', { ...base, publish: false });

    // Act
    const issues = checkTemplates(temp.dir);

    // Assess
    expect(issues.map((i) => [i.code, i.where])).toEqual([['unpublished_revision', 'fixture/r1']]);
  });
});
