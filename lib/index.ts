/**
 * `sendproof`: what a service needs to publish notification intents — the publisher, the intent schema and
 * types, and the purpose registry. No CDK here (that is `sendproof/construct`).
 */

export type { FieldIssue } from './domain/errors.js';
export {
  type AttachmentRef,
  AttachmentRefSchema,
  type Intent,
  type IntentInput,
  IntentSchemaV1,
  parseIntent,
  type ValidIntent,
} from './domain/intent.js';
export { BUILT_IN_PURPOSES, type Channel, type PurposePolicy, PurposeRegistry } from './domain/purposes.js';
export { type PublishOptions, type PublishResult, publishIntents } from './publish/publishIntents.js';
