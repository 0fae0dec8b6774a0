import type { FieldIssue } from '../domain/errors.js';
import type { Intent } from '../domain/intent.js';
import { variableName } from './definition.js';
import { TemplateError, type TemplateErrorCode } from './errors.js';
import type { FileTemplateStore } from './FileTemplateStore.js';

/** The intent field a template problem is about, so a refusal names what the caller must change. */
const FIELD_OF: Record<TemplateErrorCode, string> = {
  unknown_template: 'template.id',
  unknown_revision: 'template.revision',
  invalid_definition: 'template.revision',
  unpublished_revision: 'template.revision',
  revision_changed: 'template.revision',
  missing_file: 'template.revision',
  syntax_error: 'template.revision',
  unsupported_tag: 'template.revision',
  missing_channel: 'channels',
  invalid_locale: 'locale',
  missing_variable: 'data',
  invalid_variable: 'data',
  invalid_subject: 'data',
  sms_too_long: 'data',
  secret_outside_slot: 'secrets',
  missing_attachment: 'attachments',
  unexpected_attachment: 'attachments',
};

const fromError = (error: unknown): FieldIssue => {
  if (error instanceof TemplateError) return { field: FIELD_OF[error.code], message: error.message };
  throw error;
};

const present = (values: Readonly<Record<string, unknown>> | undefined, name: string): boolean =>
  values !== undefined && Object.hasOwn(values, name) && values[name] !== undefined && values[name] !== null;

/**
 * Checks a valid intent against the template revision it names, with the same store (same files, same
 * manifest, same strict renderer) the dispatcher renders from: every declared variable and secret slot
 * must be given, every channel must exist in the template, and the template's attachment rule must hold
 * — each missing name reported on its own. When those hold, each channel is rendered once, exactly as
 * the dispatcher will, which also catches item fields of a list, an SMS that is too long, a secret in
 * the wrong place or an unpublished revision. Rendering is pure: nothing is kept, logged or sent.
 */
export const checkIntentTemplate = (store: FileTemplateStore, intent: Intent): FieldIssue[] => {
  const key = `${intent.template.id}/${intent.template.revision}`;
  let definition: ReturnType<FileTemplateStore['load']>['definition'];
  try {
    definition = store.load(intent.template.id, intent.template.revision).definition;
  } catch (error) {
    return [fromError(error)];
  }
  const issues: FieldIssue[] = [];
  for (const channel of intent.channels)
    if (!definition.channels.includes(channel))
      issues.push({
        field: 'channels',
        message: `template ${key} has no ${channel} channel (it has ${definition.channels.join(', ')})`,
      });
  for (const variable of definition.variables) {
    const name = variableName(variable);
    if (!present(intent.data, name))
      issues.push({ field: `data.${name}`, message: `is a variable of template ${key} and is missing` });
  }
  for (const name of definition.secrets)
    if (!present(intent.secrets, name))
      issues.push({
        field: `secrets.${name}`,
        message: `is a secret slot of template ${key} and is missing`,
      });
  const attachments = intent.attachments?.length ?? 0;
  if (intent.channels.includes('email')) {
    if (definition.attachments === 'required' && attachments === 0)
      issues.push({
        field: 'attachments',
        message: `template ${key} says a file is attached; the intent has none`,
      });
    if (definition.attachments === 'none' && attachments > 0)
      issues.push({ field: 'attachments', message: `template ${key} does not carry attachments` });
  }
  if (issues.length > 0) return issues;
  for (const channel of intent.channels) {
    try {
      store.render({
        templateId: intent.template.id,
        revision: intent.template.revision,
        channel,
        ...(intent.locale ? { locale: intent.locale } : {}),
        data: intent.data ?? {},
        secrets: intent.secrets ?? {},
        ...(channel === 'email' && intent.attachments
          ? {
              attachments: intent.attachments.map((a) => ({
                filename: a.filename,
                contentType: a.contentType,
                sha256: a.sha256,
              })),
            }
          : {}),
      });
    } catch (error) {
      issues.push(fromError(error));
    }
  }
  return issues;
};
