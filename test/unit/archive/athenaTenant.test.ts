import { TrinoSQL } from 'dt-sql-parser';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  athenaStatement,
  countPlaceholders,
  loadNamedQueries,
  NamedQueryError,
  tenantLiteral,
} from '../../../lib/archive/namedQueries.js';
import { IdentifierSchema } from '../../../lib/domain/intent.js';

// Athena's injected partition projection: "The value(s) must be literals or expressions that can be
// evaluated without reading any data" (https://docs.aws.amazon.com/athena/latest/ug/partition-projection-dynamic-id-partitioning.html).
// Nothing in Athena's documentation says an ExecutionParameter is one, so the tenant is a literal.
const trino = new TrinoSQL();
const queries = loadNamedQueries();
const args = (query: (typeof queries)[number]) =>
  query.parameters.map((p, i) =>
    i === 0 ? 'clinic.example' : p.type === 'bigint' ? '1796032800000' : i < 3 ? '2026-12-01' : 'x',
  );

describe('the tenant Athena reads its injected partition from', () => {
  for (const query of queries)
    it(`${query.name}: the tenant is a literal, every other argument a parameter, and the statement parses as Trino`, () => {
      // Act
      const { sql, parameters } = athenaStatement(query, args(query));
      // Assess
      expect(sql).toContain("WHERE tenant = 'clinic.example' AND dt BETWEEN ? AND ?");
      expect(sql).not.toMatch(/tenant = \?/);
      expect(countPlaceholders(sql)).toBe(parameters.length);
      expect(parameters).toHaveLength(query.parameters.length - 1);
      expect(trino.validate(sql).map((e) => e.message)).toEqual([]);
      // The file's text (what DuckDB binds, and the CfnNamedQuery) is unchanged.
      expect(query.sql).toMatch(/WHERE tenant = \? AND/);
    });

  it('refuses a tenant outside the allow-list before any SQL is built: quotes, semicolons, comments, spaces, empty', () => {
    // Assess
    const explain = queries.find((q) => q.name === 'explain-notification')!;
    for (const hostile of [
      "acme' OR '1'='1",
      'acme;',
      'acme/*',
      'ac me',
      '',
      "acme\\'",
      '-acme',
      'a'.repeat(129),
    ])
      expect(() => athenaStatement(explain, [hostile, '2026-12-01', '2026-12-02', 'k']), hostile).toThrow(
        NamedQueryError,
      );
  });

  it('accepts every tenant an intent may carry (IdentifierSchema), as exactly that literal', () => {
    // Assess: the allow-list is not narrower than the tenants Sendproof stores.
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/), (tenant) => {
        fc.pre(IdentifierSchema.safeParse(tenant).success);
        expect(tenantLiteral(tenant)).toBe(`'${tenant}'`);
      }),
    );
  });
});
