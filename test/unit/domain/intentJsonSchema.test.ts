import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { IntentSchemaV1 } from '../../../lib/domain/intent.js';
import { INTENT_JSON_SCHEMA_FILE, intentJsonSchema } from '../../../lib/domain/intentJsonSchema.js';
import { PACKAGE_ROOT } from '../../../lib/packageRoot.js';
import { healthReportIntent, receiptIntent, resetIntent } from '../../support/fixtures.js';

const committed = JSON.parse(readFileSync(join(PACKAGE_ROOT, INTENT_JSON_SCHEMA_FILE), 'utf8'));

// An independent JSON Schema validator (what a Python or Go caller would use), not zod.
const ajv = new Ajv2020({ allErrors: true, strict: false });
// ajv-formats is CommonJS: its plugin is the module's default export.
const addFormats = addFormatsModule as unknown as { default: (a: Ajv2020) => void };
addFormats.default(ajv);
const validate = ajv.compile(committed);

describe('schema/intent-v1.json', () => {
  it('is current: regenerated from the zod schema it equals the committed file (npm run schema)', () => {
    expect(committed).toEqual(intentJsonSchema());
  });

  it('accepts the intents the zod schema accepts, and names the field of the ones it refuses', () => {
    const good = [resetIntent(), receiptIntent(), healthReportIntent(), { ...receiptIntent(), version: 1 }];
    for (const intent of good) {
      expect(IntentSchemaV1.safeParse(intent).success).toBe(true);
      expect(validate(intent), JSON.stringify(validate.errors)).toBe(true);
    }
    const bad: Array<[unknown, string]> = [
      [{ ...receiptIntent(), surprise: true }, ''],
      [{ ...receiptIntent(), eventId: 'pay:84721' }, '/eventId'],
      [{ ...receiptIntent(), version: 2 }, '/version'],
      [{ ...receiptIntent(), channels: ['email', 'email'] }, '/channels'],
      [{ ...receiptIntent(), channels: ['fax'] }, '/channels/0'],
      [{ ...resetIntent(), recipient: { ref: 'player-73', phone: '555-0123' } }, '/recipient/phone'],
      [{ ...resetIntent(), expiresAt: 'tomorrow' }, '/expiresAt'],
    ];
    for (const [intent, path] of bad) {
      expect(IntentSchemaV1.safeParse(intent).success, JSON.stringify(intent)).toBe(false);
      expect(validate(intent), JSON.stringify(intent)).toBe(false);
      expect(validate.errors?.map((e: { instancePath: string }) => e.instancePath)).toContain(path);
    }
  });
});
