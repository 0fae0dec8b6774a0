import * as z from 'zod/mini';
import './zodLocale.js';
import { IntentSchemaV1 } from './intent.js';

/** Where the generated schema is committed (and shipped as `sendproof/schema/intent-v1.json`). */
export const INTENT_JSON_SCHEMA_FILE = 'schema/intent-v1.json';

/**
 * Intent v1 as JSON Schema (draft 2020-12), generated from the zod schema the publisher and the dispatcher
 * validate with, so callers in any language check the same shape. It is the *input* shape: fields with a
 * default (`version`, `tenant`) may be left out. What JSON Schema cannot say — purpose rules, the
 * recipient address the channels need, expiry bounds, template variables — is checked on arrival, and an
 * intent that fails it becomes an `invalid` ledger row naming the field.
 */
export const intentJsonSchema = (): Record<string, unknown> => ({
  ...z.toJSONSchema(IntentSchemaV1, { io: 'input', target: 'draft-2020-12' }),
  title: 'Sendproof notification intent, version 1',
  description:
    'One notification intent, published as the SQS message body. Generated from lib/domain/intent.ts; checks beyond this schema (purpose rules, addresses per channel, expiry, template variables) run on arrival.',
});

export const intentJsonSchemaText = (): string => `${JSON.stringify(intentJsonSchema(), null, 2)}\n`;
