/**
 * Errors are values with a kind. `permanent` never succeeds on retry; `retryable` may; `ambiguous`
 * means a side effect may or may not have happened and must never be retried blindly.
 */
export type ErrorKind = 'permanent' | 'retryable' | 'ambiguous';

export class SendproofError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;
  /** `options.cause`: the error this one explains (ES2022 ErrorOptions), kept for logs and debuggers. */
  constructor(kind: ErrorKind, code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.kind = kind;
    this.code = code;
  }
}

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `recipient.email` or `channels.1`; `(root)` for the whole message. */
  field: string;
  message: string;
}

/** A notification intent that failed validation at the boundary. Never carries the raw values. */
export class IntentValidationError extends SendproofError {
  readonly issues: FieldIssue[];
  constructor(issues: FieldIssue[]) {
    super(
      'permanent',
      'invalid_intent',
      `invalid intent: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`,
    );
    this.issues = issues;
  }
  toJSON() {
    return { error: this.code, kind: this.kind, issues: this.issues };
  }
}

/** A transition the state table does not allow, or one whose version condition failed. */
export class TransitionRefusedError extends SendproofError {
  constructor(message: string) {
    super('permanent', 'transition_refused', message);
  }
}

/** Configuration that cannot be used (bad env var, unknown purpose, missing template). */
export class ConfigurationError extends SendproofError {
  constructor(message: string) {
    super('permanent', 'configuration', message);
  }
}
