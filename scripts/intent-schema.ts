// `npm run schema`: writes schema/intent-v1.json from the zod schema (test/unit/domain/intentJsonSchema.test.ts
// fails while the committed file is not current).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { INTENT_JSON_SCHEMA_FILE, intentJsonSchemaText } from '../lib/domain/intentJsonSchema.js';
import { PACKAGE_ROOT } from '../lib/packageRoot.js';

const file = join(PACKAGE_ROOT, INTENT_JSON_SCHEMA_FILE);
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, intentJsonSchemaText());
process.stdout.write(`wrote ${INTENT_JSON_SCHEMA_FILE}\n`);
