import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  athenaExecutionParameters,
  bindArguments,
  countPlaceholders,
  loadNamedQueries,
  NamedQueryError,
  parseNamedQuery,
  QUERIES_DIR,
} from '../../../lib/archive/namedQueries.js';
import { TERMINAL_STATES } from '../../../lib/domain/states.js';

describe('named query files', () => {
  it('every file has a name, a description, and exactly one declared parameter per placeholder', () => {
    // Act
    const queries = loadNamedQueries();

    // Assess
    // One query per file in queries/ (the console's chart queries and the SLO queries add files).
    expect(queries).toHaveLength(readdirSync(QUERIES_DIR).filter((f) => f.endsWith('.sql')).length);
    expect(queries.length).toBeGreaterThanOrEqual(11);
    for (const q of queries) {
      expect(q.description.length).toBeGreaterThan(20);
      expect(countPlaceholders(q.sql)).toBe(q.parameters.length);
      expect(q.sql).toMatch(/\btransitions\b/);
      expect(q.sql).not.toMatch(/^--/m);
    }
  });

  it('the daily outcomes query counts exactly the terminal states of the state table', () => {
    // Prepare
    const sql = loadNamedQueries().find((q) => q.name === 'channel-outcomes-daily')!.sql;

    // Act
    const listed = [...sql.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);

    // Assess
    expect([...listed].sort()).toEqual([...TERMINAL_STATES].sort());
  });

  it('a header that declares fewer parameters than placeholders is refused', () => {
    // Act & Assess
    expect(() =>
      parseNamedQuery(
        '-- name: x\n-- description: d\nSELECT * FROM transitions WHERE a = ? AND b = ?',
        'x.sql',
      ),
    ).toThrow(NamedQueryError);
  });

  it('arguments are typed by the declared parameter and quoted as literals for Athena', () => {
    // Prepare
    const q = parseNamedQuery(
      "-- name: q\n-- description: d\n-- param: k string key\n-- param: c bigint cut\nSELECT '?' FROM transitions WHERE k = ? AND c < ?",
      'q.sql',
    );

    // Act
    const bound = bindArguments(q, ["o'neil", '1796032800000']);
    const athena = athenaExecutionParameters(q, ["o'neil", '1796032800000']);

    // Assess
    expect(bound).toEqual(["o'neil", 1796032800000n]);
    expect(athena).toEqual(["'o''neil'", '1796032800000']);
    expect(() => bindArguments(q, ['k', 'yesterday'])).toThrow(/must be an integer/);
    expect(() => bindArguments(q, ['k'])).toThrow(/takes 2 argument/);
  });
});
