import { describe, expect, it } from 'vitest';
import type { NamedQuery } from '../../../lib/archive/namedQueries.js';
import { lazyAuditQueries } from '../../../lib/console/lazyAuditQueries.js';
import type { AuditQueries } from '../../../lib/console/ports.js';

const QUERY: NamedQuery = { name: 'q', description: 'a query', parameters: [], sql: 'SELECT 1' };

describe('lazyAuditQueries', () => {
  it('lists and names the engine without loading it, and loads it once on the first run', async () => {
    // Prepare
    let loads = 0;
    const engine: AuditQueries = {
      list: () => [QUERY],
      run: async (name) => ({ columns: ['name'], rows: [{ name }] }),
    };
    const audit = lazyAuditQueries({ engine: 'Athena (workgroup w)', list: () => [QUERY] }, async () => {
      loads++;
      return engine;
    });
    // Act
    const listed = audit.list();
    // Assess
    expect(audit.engine).toBe('Athena (workgroup w)');
    expect(listed).toEqual([QUERY]);
    expect(loads).toBe(0);
    await expect(audit.run('q', [])).resolves.toEqual({ columns: ['name'], rows: [{ name: 'q' }] });
    await audit.run('q', []);
    expect(loads).toBe(1);
  });

  it('fails the run whose load failed and loads again on the next one', async () => {
    // Prepare
    let loads = 0;
    const audit = lazyAuditQueries({ engine: 'e', list: () => [QUERY] }, async () => {
      loads++;
      if (loads === 1) throw new Error('chunk not found');
      return { list: () => [QUERY], run: async () => ({ columns: [], rows: [] }) };
    });
    // Act + Assess
    await expect(audit.run('q', [])).rejects.toThrow('chunk not found');
    await expect(audit.run('q', [])).resolves.toEqual({ columns: [], rows: [] });
    expect(loads).toBe(2);
  });
});
