// `npm run schema`: writes schema/intent-v1.json and schema/outcome-event-v1.json from their zod schemas
// (test/unit/domain/intentJsonSchema.test.ts and test/unit/events/outcomeEvent.test.ts fail while a
// committed file is not current).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { INTENT_JSON_SCHEMA_FILE, intentJsonSchemaText } from '../lib/domain/intentJsonSchema.js';
import { OUTCOME_EVENT_JSON_SCHEMA_FILE, outcomeEventJsonSchemaText } from '../lib/events/outcomeEvent.js';
import { PACKAGE_ROOT } from '../lib/packageRoot.js';

for (const [name, text] of [
  [INTENT_JSON_SCHEMA_FILE, intentJsonSchemaText()],
  [OUTCOME_EVENT_JSON_SCHEMA_FILE, outcomeEventJsonSchemaText()],
] as const) {
  const file = join(PACKAGE_ROOT, name);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  process.stdout.write(`wrote ${name}\n`);
}
