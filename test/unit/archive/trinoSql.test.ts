import { TrinoSQL } from 'dt-sql-parser';
import { describe, expect, it } from 'vitest';
import { loadNamedQueries, UNIQUE_TRANSITIONS_CTE } from '../../../lib/archive/namedQueries.js';
import { ARCHIVE_TABLE } from '../../../lib/archive/schema.js';

// Athena (engine v3) is Trino: every named query must parse with a Trino grammar, not only run on
// DuckDB. dt-sql-parser's TrinoSQL is the ANTLR grammar of Trino's SQL.
const trino = new TrinoSQL();
const tablesOf = (sql: string): string[] =>
  (trino.getAllEntities(sql) ?? [])
    .filter((e) => String(e.entityContextType).toLowerCase() === 'table')
    .map((e) => e.text.toLowerCase());

describe('named queries against the Trino grammar', () => {
  const queries = loadNamedQueries();

  it('the parser really checks: a broken statement and a DuckDB-only spelling are refused', () => {
    // Act & Assess
    expect(trino.validate('SELECT FROM WHERE')).not.toHaveLength(0);
    expect(trino.validate('SELECT * EXCLUDE (copy_number) FROM transitions')).not.toHaveLength(0);
    expect(trino.validate(`${UNIQUE_TRANSITIONS_CTE} SELECT * FROM unique_transitions`)).toEqual([]);
  });

  for (const query of queries) {
    it(`${query.name} parses as Trino SQL`, () => {
      // Act
      const errors = trino.validate(query.sql);

      // Assess
      expect(errors.map((e) => `${e.startLine}:${e.startColumn} ${e.message}`)).toEqual([]);
    });
  }

  it('every named query reads the archive only through the shared CTE, which pins tenant and a dt range', () => {
    // Assess: the one CTE constrains the partitions (tenant by equality, as injected projection requires)
    // and counts each transition once.
    expect(UNIQUE_TRANSITIONS_CTE).toMatch(/FROM transitions\s+WHERE tenant = \? AND dt BETWEEN \? AND \?/);
    expect(UNIQUE_TRANSITIONS_CTE).toMatch(/PARTITION BY dedupe_key, version, transition_at_ms, to_state/);
    for (const query of queries) {
      expect(query.sql.startsWith(UNIQUE_TRANSITIONS_CTE), query.name).toBe(true);
      // `transitions` is read exactly once, inside the CTE: no second, unfiltered read of the table.
      expect(query.sql.match(/\bFROM\s+transitions\b/gi), query.name).toHaveLength(1);
      expect(
        tablesOf(query.sql).filter((t) => t === ARCHIVE_TABLE),
        query.name,
      ).toHaveLength(1);
      expect(query.parameters.slice(0, 3).map((p) => p.name)).toEqual(['tenant', 'day_from', 'day_to']);
    }
  });
});
