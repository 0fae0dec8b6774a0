import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import type { Channel } from '../../lib/domain/purposes.js';
import { checkRevision, checkTemplates } from '../../lib/templates/check.js';
import { variableItems, variableName } from '../../lib/templates/definition.js';
import { TemplateError } from '../../lib/templates/errors.js';
import { DEFAULT_TEMPLATES_DIR, FileTemplateStore } from '../../lib/templates/FileTemplateStore.js';
import { listRevisions, publishRevision, revisionKey } from '../../lib/templates/manifest.js';
import type { RenderRequest } from '../../lib/templates/port.js';
import { countSmsSegments, DEFAULT_MAX_SMS_SEGMENTS } from '../../lib/templates/smsSegments.js';

/**
 * `sendproof template …`: list, preview, check and publish the application-owned templates in
 * `templates/`. Previews show secrets masked; the real values only decide segment counts.
 */

const MASK = '••••';

interface GlobalOptions {
  templatesDir?: string;
  json?: boolean;
}

const out = (text: string): void => {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
};

const templatesDirOf = (command: Command): string => {
  const dir = (command.optsWithGlobals() as GlobalOptions).templatesDir;
  return dir ? resolve(dir) : DEFAULT_TEMPLATES_DIR;
};

/** Runs an action; with --json an error becomes `{ error, message }` on stdout and exit code 1. */
const action =
  (fn: (command: Command) => void) =>
  (...args: unknown[]): void => {
    const command = args[args.length - 1] as Command;
    try {
      fn(command);
    } catch (error) {
      if (!(command.opts() as GlobalOptions).json) throw error;
      const code = error instanceof TemplateError ? error.code : 'error';
      out(JSON.stringify({ error: code, message: error instanceof Error ? error.message : String(error) }));
      process.exitCode = 1;
    }
  };

const readJsonObject = (path: string, what: string): Record<string, unknown> => {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    // Not the parser's message: it quotes the text around the error, and a secrets file holds secrets.
    throw new Error(`${what} file ${path} is not readable JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error(`${what} file ${path} must hold a JSON object`);
  return value as Record<string, unknown>;
};

const listCommand = (command: Command): void => {
  const dir = templatesDirOf(command);
  const store = new FileTemplateStore(dir, { requirePublished: false });
  const rows = listRevisions(dir).map(({ templateId, revision }) => {
    const loaded = store.load(templateId, revision);
    const d = loaded.definition;
    return {
      template: templateId,
      revision,
      owner: d.owner,
      status: loaded.published,
      channels: d.channels,
      locales: [d.defaultLocale, ...d.locales],
      variables: d.variables.map((v) =>
        variableItems(v).length ? `${variableName(v)}[${variableItems(v).join(',')}]` : variableName(v),
      ),
      secrets: d.secrets,
      digest: loaded.digest,
    };
  });
  if ((command.opts() as GlobalOptions).json) out(JSON.stringify({ templates: rows }));
  else if (rows.length === 0) out(`no templates in ${dir}`);
  else
    for (const r of rows)
      out(
        `${revisionKey(r.template, r.revision).padEnd(22)} ${r.status.padEnd(11)} ${r.channels.join('+').padEnd(9)} ` +
          `locales ${r.locales.join(',').padEnd(8)} variables ${r.variables.join(' ')}` +
          (r.secrets.length ? `  secrets ${r.secrets.join(' ')}` : ''),
      );
};

interface PreviewOptions extends GlobalOptions {
  data: string;
  secrets?: string;
  locale?: string;
  channel?: Channel;
  out: string;
  maxSegments: string;
}

const previewCommand = (templateId: string, revision: string, command: Command): void => {
  const options = command.opts() as PreviewOptions;
  const dir = templatesDirOf(command);
  const limit = Number.parseInt(options.maxSegments, 10);
  if (!Number.isInteger(limit) || limit < 1) throw new Error('--max-segments must be a positive integer');
  // Preview may look at a revision before it is published; segments are compared with the limit below.
  const store = new FileTemplateStore(dir, {
    requirePublished: false,
    maxSmsSegments: Number.POSITIVE_INFINITY,
  });
  const loaded = store.load(templateId, revision);
  const data = readJsonObject(options.data, 'data');
  const secretsRaw = options.secrets ? readJsonObject(options.secrets, 'secrets') : {};
  const secrets: Record<string, string> = {};
  for (const [name, value] of Object.entries(secretsRaw)) {
    if (typeof value !== 'string') throw new Error(`secret ${name} must be a string`);
    secrets[name] = value;
  }
  const masked = Object.fromEntries(Object.keys(secrets).map((name) => [name, MASK]));
  const channels = options.channel ? [options.channel] : loaded.definition.channels;
  const base = { templateId, revision, data, ...(options.locale ? { locale: options.locale } : {}) };
  const result: Record<string, unknown> = {
    template: templateId,
    revision,
    owner: loaded.definition.owner,
    status: loaded.published,
    digest: loaded.digest,
  };
  const lines: string[] = [];
  let overLimit = false;
  for (const channel of channels) {
    const request: RenderRequest = { ...base, channel, secrets };
    // The email template may require an attachment; a preview has none, so it pretends one placeholder.
    if (channel === 'email' && loaded.definition.attachments === 'required')
      request.attachments = [
        { filename: 'attachment.pdf', contentType: 'application/pdf', sha256: '0'.repeat(64) },
      ];
    const real = store.render(request);
    const shown = store.render({ ...request, secrets: masked });
    result.locale = shown.locale;
    if (channel === 'email') {
      mkdirSync(options.out, { recursive: true });
      const htmlFile = join(options.out, `${templateId}.${revision}.${shown.locale}.email.html`);
      writeFileSync(htmlFile, `${shown.content.html ?? ''}\n`);
      result.email = { subject: shown.content.subject, text: shown.content.text, htmlFile };
      lines.push(
        `── email (${shown.locale}) ──`,
        `Subject: ${shown.content.subject}`,
        '',
        shown.content.text,
        '',
        `HTML written to ${htmlFile}`,
      );
    } else {
      // Segments come from the real rendering: a masked token is shorter and is not GSM-7.
      const count = countSmsSegments(real.content.text);
      const within = count.segments <= limit;
      overLimit ||= !within;
      result.sms = { text: shown.content.text, ...count, limit, withinLimit: within };
      lines.push(
        `── sms (${shown.locale}) ── ${count.segments} segment${count.segments === 1 ? '' : 's'}, ${count.encoding}, ` +
          `${count.units} ${count.encoding === 'GSM-7' ? 'septets' : 'UTF-16 units'}` +
          (within ? '' : ` — OVER THE LIMIT OF ${limit}`),
        shown.content.text,
      );
    }
  }
  if (overLimit) process.exitCode = 1;
  if (options.json) out(JSON.stringify(result));
  else
    out(
      [
        `${revisionKey(templateId, revision)}  owner ${loaded.definition.owner}  ${loaded.published}`,
        ...lines,
      ].join('\n'),
    );
};

const checkCommand = (command: Command): void => {
  const dir = templatesDirOf(command);
  const issues = checkTemplates(dir);
  const revisions = listRevisions(dir).length;
  if (issues.length > 0) process.exitCode = 1;
  if ((command.opts() as GlobalOptions).json)
    out(JSON.stringify({ ok: issues.length === 0, revisions, issues }));
  else if (issues.length === 0) out(`ok: ${revisions} revisions, manifest up to date, no issues`);
  else {
    for (const i of issues) out(`${i.code.padEnd(20)} ${i.where}: ${i.message}`);
    out(`${issues.length} issue${issues.length === 1 ? '' : 's'} in ${revisions} revisions`);
  }
};

const publishCommand = (templateId: string, revision: string, command: Command): void => {
  const dir = templatesDirOf(command);
  const issues = checkRevision(dir, templateId, revision);
  if (issues.length > 0)
    throw new TemplateError(
      'invalid_definition',
      `${revisionKey(templateId, revision)} is not publishable: ${issues.map((i) => `${i.where}: ${i.message}`).join('; ')}`,
    );
  const digest = publishRevision(dir, templateId, revision);
  if ((command.opts() as GlobalOptions).json) out(JSON.stringify({ template: templateId, revision, digest }));
  else out(`published ${revisionKey(templateId, revision)} ${digest}`);
};

export const register = (program: Command): void => {
  const template = program
    .command('template')
    .description('Application-owned templates: list, preview, check and publish immutable revisions')
    .option('--templates-dir <dir>', 'templates folder (default: the repository templates/)');
  template
    .command('list')
    .description('List every template revision with its channels, locales, variables and publication status')
    .option('--json', 'machine-readable output')
    .action(action((command) => listCommand(command)));
  template
    .command('preview <id> <revision>')
    .description('Render a revision with sample data; secrets are shown masked')
    .requiredOption('--data <file>', 'JSON object with the template data')
    .option('--secrets <file>', 'JSON object with secret values (shown as ••••)')
    .option('--locale <locale>', 'requested locale, e.g. pt-BR (falls back to pt, then the default)')
    .addOption(new Option('--channel <channel>', 'render one channel only').choices(['email', 'sms']))
    .option('--out <dir>', 'where to write the rendered email HTML', '.sendproof/preview')
    .option('--max-segments <n>', 'SMS segment limit to compare against', String(DEFAULT_MAX_SMS_SEGMENTS))
    .option('--json', 'machine-readable output')
    .action(action((command) => previewCommand(command.args[0] ?? '', command.args[1] ?? '', command)));
  template
    .command('check')
    .description('Check every revision: manifest digests, required files, variables declared versus used')
    .option('--json', 'machine-readable output')
    .action(action((command) => checkCommand(command)));
  template
    .command('publish <id> <revision>')
    .description('Pin a new, checked revision in templates/manifest.json (never overwrites a published one)')
    .option('--json', 'machine-readable output')
    .action(action((command) => publishCommand(command.args[0] ?? '', command.args[1] ?? '', command)));
};
