import { describe, expect, it } from 'vitest';
import { loadNamedQueries } from '../../../lib/archive/namedQueries.js';
import { FACTS } from '../../../lib/evidence/facts.js';
import {
  ACCEPTANCE_DECIDING,
  ACCEPTANCE_GOOD,
  DELIVERY_DECIDING,
  DELIVERY_GOOD,
} from '../../../lib/slo/objectives.js';

// The stream metrics (lib/slo/observations.ts) and the archive query must judge by the same lists.
const sql = loadNamedQueries().find((q) => q.name === 'slo-attainment')!.sql;
const listAfter = (marker: string): string[] => {
  const start = sql.indexOf(marker);
  const body = sql.slice(start + marker.length, sql.indexOf(')', start + marker.length));
  return [...body.matchAll(/'([a-z_:]+)'/g)].map((m) => m[1]!);
};

describe('slo-attainment judges by the rules lib/slo/objectives.ts declares', () => {
  it('the deciding states and facts are the same lists, in both places', () => {
    expect(listAfter('AND to_state IN (').sort()).toEqual([...ACCEPTANCE_DECIDING].sort());
    expect(sql).toContain(`a.decided_state IN (${ACCEPTANCE_GOOD.map((s) => `'${s}'`).join(', ')})`);
    const facts = sql.slice(sql.indexOf("record_kind = 'delivery_fact'"));
    const decisive = [...facts.slice(0, facts.indexOf('GROUP BY')).matchAll(/'delivery:([a-z_]+)'/g)].map(
      (m) => m[1],
    );
    expect(decisive.sort()).toEqual([...DELIVERY_DECIDING].sort());
    expect(sql).toContain(`d.decided_fact IN (${DELIVERY_GOOD.map((f) => `'delivery:${f}'`).join(', ')})`);
    for (const fact of DELIVERY_DECIDING) expect(FACTS).toContain(fact);
  });
});
