import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CHANNEL_FILES,
  DEFINITION_FILE,
  isHtmlFile,
  requiredFiles,
  type TemplateDefinition,
  TemplateDefinitionSchema,
  type TemplateFile,
  variableItems,
  variableName,
} from './definition.js';
import { TemplateError } from './errors.js';
import { listRevisions, type ManifestIssueCode, revisionKey, verifyManifest } from './manifest.js';
import { type MustacheToken, parseTemplate } from './strictRender.js';

export type CheckIssueCode =
  | ManifestIssueCode
  | 'invalid_definition'
  | 'missing_file'
  | 'unexpected_file'
  | 'syntax_error'
  | 'unsupported_tag'
  | 'unescaped_html'
  | 'undeclared_variable'
  | 'unused_variable'
  | 'secret_outside_slot';

export interface CheckIssue {
  code: CheckIssueCode;
  /** `<id>/<revision>`, plus `/<file>` when one file is at fault. */
  where: string;
  message: string;
}

/** Names that hold credentials in practice; declaring one as plain data would let it be persisted. */
const SECRET_LOOKING = /(token|otp|passw(or)?d|passcode|secret)/i;

interface Scope {
  section: string;
  items: readonly string[];
}

/** Walks one file's tokens, recording which declared names it uses and what it does wrong. */
const inspectFile = (
  where: string,
  file: TemplateFile,
  tokens: readonly MustacheToken[],
  definition: TemplateDefinition,
  used: Set<string>,
  issues: CheckIssue[],
): void => {
  const declared = new Map(definition.variables.map((v) => [variableName(v), variableItems(v)]));
  const walk = (list: readonly MustacheToken[], scopes: readonly Scope[]): void => {
    for (const token of list) {
      const [type, name] = token;
      if (type === 'text' || type === '!') continue;
      if (type === '>' || type === '=') {
        issues.push({
          code: 'unsupported_tag',
          where,
          message: `${type === '>' ? 'partials' : 'delimiter changes'} are not supported ({{${type}${name}}})`,
        });
        continue;
      }
      if (type === '&' && isHtmlFile(file))
        issues.push({
          code: 'unescaped_html',
          where,
          message: `{{{${name}}}} / {{&${name}}} skips HTML escaping; use {{${name}}}`,
        });
      const head = name.split('.')[0] ?? name;
      const scope = [...scopes].reverse().find((s) => s.items.includes(head));
      if (name === '.') {
        if (scopes.length === 0)
          issues.push({
            code: 'undeclared_variable',
            where,
            message: '{{.}} is only meaningful inside a section',
          });
      } else if (scope) {
        used.add(`${scope.section}.${head}`);
      } else if (declared.has(head)) {
        used.add(head);
      } else if (definition.secrets.includes(head)) {
        used.add(head);
        if (file === 'email.subject')
          issues.push({
            code: 'secret_outside_slot',
            where,
            message: `secret ${head} is used in the subject; subjects show in inbox lists, lock screens and provider logs`,
          });
        if (type === '#' || type === '^')
          issues.push({
            code: 'secret_outside_slot',
            where,
            message: `secret ${head} is used as a section; a secret may only fill a value slot`,
          });
      } else {
        issues.push({
          code: 'undeclared_variable',
          where,
          message: `uses ${name}, which ${DEFINITION_FILE} declares neither as a variable nor as a secret`,
        });
      }
      if (type === '#' || type === '^') {
        const items = type === '#' && !scope ? (declared.get(head) ?? []) : [];
        walk(token[4] ?? [], [...scopes, { section: head, items }]);
      }
    }
  };
  walk(tokens, []);
};

const readDefinition = (dir: string, where: string, issues: CheckIssue[]): TemplateDefinition | undefined => {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, DEFINITION_FILE), 'utf8'));
  } catch {
    issues.push({ code: 'invalid_definition', where, message: `${DEFINITION_FILE} is not valid JSON` });
    return undefined;
  }
  const parsed = TemplateDefinitionSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues)
    issues.push({
      code: 'invalid_definition',
      where,
      message: `${DEFINITION_FILE} ${issue.path.join('.') || '(root)'}: ${issue.message}`,
    });
  return undefined;
};

const filesBelow = (dir: string, prefix = ''): string[] =>
  readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    return entry.isDirectory() ? filesBelow(dir, rel) : [rel];
  });

/** Checks one revision folder: definition, files, syntax, and variables declared versus used. */
export const checkRevision = (templatesDir: string, templateId: string, revision: string): CheckIssue[] => {
  const key = revisionKey(templateId, revision);
  const dir = join(templatesDir, templateId, revision);
  const issues: CheckIssue[] = [];
  const definition = readDefinition(dir, key, issues);
  if (!definition) return issues;

  const expected = new Set(requiredFiles(definition));
  for (const rel of expected)
    if (!existsSync(join(dir, rel)))
      issues.push({ code: 'missing_file', where: key, message: `${rel} is missing` });
  for (const rel of filesBelow(dir))
    if (rel !== DEFINITION_FILE && !expected.has(rel))
      issues.push({
        code: 'unexpected_file',
        where: `${key}/${rel}`,
        message: `is not a file of channels ${definition.channels.join(', ')} in locales ${[definition.defaultLocale, ...definition.locales].join(', ')}`,
      });

  const used = new Set<string>();
  for (const locale of [null, ...definition.locales])
    for (const channel of definition.channels)
      for (const file of CHANNEL_FILES[channel]) {
        const rel = locale ? `${locale}/${file}` : file;
        const where = `${key}/${rel}`;
        if (!existsSync(join(dir, rel))) continue;
        try {
          const tokens = parseTemplate(readFileSync(join(dir, rel), 'utf8'), where);
          inspectFile(where, file, tokens, definition, used, issues);
        } catch (error) {
          if (!(error instanceof TemplateError)) throw error;
          issues.push({ code: 'syntax_error', where, message: error.message });
        }
      }

  for (const v of definition.variables) {
    const name = variableName(v);
    if (!used.has(name))
      issues.push({
        code: 'unused_variable',
        where: key,
        message: `variable ${name} is declared but never used`,
      });
    for (const item of variableItems(v))
      if (!used.has(`${name}.${item}`))
        issues.push({
          code: 'unused_variable',
          where: key,
          message: `item field ${name}.${item} is declared but never used`,
        });
    if (SECRET_LOOKING.test(name))
      issues.push({
        code: 'secret_outside_slot',
        where: key,
        message: `variable ${name} looks like a secret; declare it under "secrets" so it is never persisted`,
      });
  }
  for (const name of definition.secrets)
    if (!used.has(name))
      issues.push({
        code: 'unused_variable',
        where: key,
        message: `secret ${name} is declared but never used`,
      });
  return issues;
};

/** Everything `sendproof template check` reports: each revision's own issues, then the manifest's. */
export const checkTemplates = (templatesDir: string): CheckIssue[] => [
  ...listRevisions(templatesDir).flatMap(({ templateId, revision }) =>
    checkRevision(templatesDir, templateId, revision),
  ),
  ...verifyManifest(templatesDir).map((i) => ({ code: i.code, where: i.revision, message: i.message })),
];
