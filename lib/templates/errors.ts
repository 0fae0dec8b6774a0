import { SendproofError } from '../domain/errors.js';

export type TemplateErrorCode =
  | 'unknown_template'
  | 'unknown_revision'
  | 'invalid_definition'
  | 'unpublished_revision'
  | 'revision_changed'
  | 'missing_channel'
  | 'missing_file'
  | 'invalid_locale'
  | 'missing_variable'
  | 'invalid_variable'
  | 'secret_outside_slot'
  | 'invalid_subject'
  | 'missing_attachment'
  | 'unexpected_attachment'
  | 'syntax_error'
  | 'unsupported_tag'
  | 'sms_too_long';

/**
 * Anything that stops a template from rendering. Always permanent: the same request renders the same way
 * on every retry. Messages name the template, file and variable, never a data or secret value.
 */
export class TemplateError extends SendproofError {
  declare readonly code: TemplateErrorCode;
  constructor(code: TemplateErrorCode, message: string) {
    super('permanent', code, message);
  }
  toJSON() {
    return { error: this.code, kind: this.kind, message: this.message };
  }
}
