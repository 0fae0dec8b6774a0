import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { register } from '../../../cli/commands/template.js';
import { FileTemplateStore } from '../../../lib/templates/FileTemplateStore.js';
import { countSmsSegments } from '../../../lib/templates/smsSegments.js';
import { makeTemplatesDir, simpleSpec, writeRevision } from './revisionFixture.js';

const TOKEN = 'tok_cli_Yh7Kp2Qs9Vb4Nm1Xc8Lw3Ez6Rt0Ua5Jg';
const DATA = { appName: 'Acme Play', resetUrl: 'https://play.example.com/reset', expiresInMinutes: 30 };

/** Runs `sendproof template …` in-process and returns what it printed and the exit code it set. */
const run = async (...args: string[]): Promise<{ stdout: string; exitCode: number }> => {
  const program = new Command().exitOverride();
  register(program);
  const chunks: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    await program.parseAsync(['template', ...args], { from: 'user' });
  } finally {
    spy.mockRestore();
  }
  const exitCode = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { stdout: chunks.join(''), exitCode };
};

describe('sendproof template', () => {
  let temp: ReturnType<typeof makeTemplatesDir>;
  beforeEach(() => {
    temp = makeTemplatesDir();
    writeFileSync(join(temp.dir, 'data.json'), JSON.stringify(DATA));
    writeFileSync(join(temp.dir, 'secrets.json'), JSON.stringify({ token: TOKEN }));
  });
  afterEach(() => {
    temp.remove();
    process.exitCode = 0;
  });

  it('list --json lists every built-in revision as published, with its variables and secrets', async () => {
    // Act
    const { stdout, exitCode } = await run('list', '--json');

    // Assess
    const { templates } = JSON.parse(stdout) as {
      templates: Array<{ template: string; revision: string; status: string; secrets: string[] }>;
    };
    expect(exitCode).toBe(0);
    expect(templates.map((t) => `${t.template}/${t.revision}`)).toEqual([
      'health-report/v1',
      'password-reset/v1',
      'password-reset/v2',
      'receipt/v4',
      'receipt/v5',
    ]);
    expect(templates.every((t) => t.status === 'published')).toBe(true);
    expect(templates.find((t) => t.template === 'password-reset')?.secrets).toEqual(['token']);
  });

  it('check --json reports the built-ins clean with exit code 0', async () => {
    // Act
    const { stdout, exitCode } = await run('check', '--json');

    // Assess
    expect(JSON.parse(stdout)).toEqual({ ok: true, revisions: 5, issues: [] });
    expect(exitCode).toBe(0);
  });

  it('check exits non-zero and names the problem when a revision is broken', async () => {
    // Prepare
    const spec = simpleSpec();
    writeRevision(temp.dir, 'broken', 'r1', {
      ...spec,
      files: { ...spec.files, 'email.subject': 'Code {{code}}' },
    });

    // Act
    const { stdout, exitCode } = await run('--templates-dir', temp.dir, 'check');

    // Assess
    expect(exitCode).toBe(1);
    expect(stdout).toContain('secret_outside_slot');
    expect(stdout).toContain('broken/r1/email.subject');
  });

  it('preview masks secrets in what it prints and in the HTML it writes, and counts SMS segments on the real text', async () => {
    // Prepare
    const out = join(temp.dir, 'preview');
    const real = new FileTemplateStore().render({
      templateId: 'password-reset',
      revision: 'v1',
      channel: 'sms',
      locale: 'pt',
      data: DATA,
      secrets: { token: TOKEN },
    });

    // Act
    const { stdout, exitCode } = await run(
      'preview',
      'password-reset',
      'v1',
      '--data',
      join(temp.dir, 'data.json'),
      '--secrets',
      join(temp.dir, 'secrets.json'),
      '--locale',
      'pt-BR',
      '--out',
      out,
      '--json',
    );

    // Assess
    const result = JSON.parse(stdout) as {
      locale: string;
      email: { text: string; htmlFile: string };
      sms: { text: string; segments: number; encoding: string; withinLimit: boolean };
    };
    const html = readFileSync(result.email.htmlFile, 'utf8');
    expect(exitCode).toBe(0);
    expect(result.locale).toBe('pt');
    expect(stdout).not.toContain(TOKEN);
    expect(html).not.toContain(TOKEN);
    expect(result.email.text).toContain('?token=••••');
    expect(html).toContain('?token=••••');
    expect(result.sms.text).toContain('?token=••••');
    expect(result.sms).toMatchObject({
      segments: countSmsSegments(real.content.text).segments,
      encoding: 'GSM-7',
      withinLimit: true,
    });
  });

  it('preview flags an SMS over the segment limit with exit code 1', async () => {
    // Prepare: a long token pushes the SMS to two segments; the limit is one.
    writeFileSync(join(temp.dir, 'secrets.json'), JSON.stringify({ token: `${TOKEN}${'k'.repeat(100)}` }));

    // Act
    const { stdout, exitCode } = await run(
      'preview',
      'password-reset',
      'v1',
      '--channel',
      'sms',
      '--data',
      join(temp.dir, 'data.json'),
      '--secrets',
      join(temp.dir, 'secrets.json'),
      '--max-segments',
      '1',
    );

    // Assess
    expect(exitCode).toBe(1);
    expect(stdout).toMatch(/── sms \(en\) ── 2 segments, GSM-7, \d+ septets — OVER THE LIMIT OF 1/);
    expect(stdout).not.toContain(TOKEN);
  });

  it('preview --json turns a template error into a JSON error and exit code 1', async () => {
    // Prepare: the secret passed as data, which the template refuses.
    writeFileSync(join(temp.dir, 'data.json'), JSON.stringify({ ...DATA, token: TOKEN }));

    // Act
    const { stdout, exitCode } = await run(
      'preview',
      'password-reset',
      'v1',
      '--data',
      join(temp.dir, 'data.json'),
      '--out',
      temp.dir,
      '--json',
    );

    // Assess
    expect(JSON.parse(stdout)).toMatchObject({ error: 'secret_outside_slot' });
    expect(stdout).not.toContain(TOKEN);
    expect(exitCode).toBe(1);
  });

  it('publish pins a checked new revision and refuses one that fails the check', async () => {
    // Prepare
    writeRevision(temp.dir, 'greeting', 'r1', simpleSpec({ publish: false }));
    const bad = simpleSpec({ publish: false });
    writeRevision(temp.dir, 'greeting', 'r2', {
      ...bad,
      files: { ...bad.files, 'email.subject': 'Code {{code}}' },
    });

    // Act
    const published = await run('--templates-dir', temp.dir, 'publish', 'greeting', 'r1', '--json');
    const refused = await run('--templates-dir', temp.dir, 'publish', 'greeting', 'r2', '--json');

    // Assess
    expect(JSON.parse(published.stdout)).toMatchObject({ template: 'greeting', revision: 'r1' });
    expect(published.exitCode).toBe(0);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: 'invalid_definition' });
    expect(refused.exitCode).toBe(1);
    expect(Object.keys(JSON.parse(readFileSync(join(temp.dir, 'manifest.json'), 'utf8')))).toEqual([
      'greeting/r1',
    ]);
  });
});
