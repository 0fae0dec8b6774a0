import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  normalizeTables,
  renderTable,
  TABLE_END,
  TABLE_START,
  TRANSPORTS_DOC,
} from '../../../scripts/transports-table.js';

describe('docs/transports.md lists every documented event and error of the corpus', () => {
  it('the table in the document is the one the corpus renders (npx tsx scripts/transports-table.ts --write)', () => {
    // Prepare
    const doc = readFileSync(TRANSPORTS_DOC, 'utf8');

    // Act
    const section = doc.slice(doc.indexOf(TABLE_START), doc.indexOf(TABLE_END) + TABLE_END.length);

    // Assess (column padding aside: the formatter aligns the columns)
    expect(doc).toContain(TABLE_START);
    expect(normalizeTables(section)).toBe(normalizeTables(renderTable()));
  });
});
