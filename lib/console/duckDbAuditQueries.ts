import { loadNamedQueries, type NamedQuery } from '../archive/namedQueries.js';
import { ConfigurationError } from '../domain/errors.js';
import type { AuditQueries } from './ports.js';

// Local only (DuckDB is a native module): the Lambda bundle never imports this file, and DuckDB itself loads
// on the first query, not with the CLI (its load was most of every `sendproof` call: bench/cliTimings.ts).
/** Named queries over the local archive folder; each run opens DuckDB afresh so new objects are seen. */
export const duckDbAuditQueries = (
  archiveDir: string,
  queries: NamedQuery[] = loadNamedQueries(),
): AuditQueries => ({
  engine: 'DuckDB over the local archive mirror',
  list: () => queries,
  async run(name, args) {
    const query = queries.find((q) => q.name === name);
    if (!query) throw new ConfigurationError(`no named query ${name}`);
    const { DuckDbAudit } = await import('../archive/DuckDbAudit.js');
    const audit = await DuckDbAudit.open(archiveDir);
    try {
      return await audit.runNamed(query, args);
    } finally {
      audit.close();
    }
  },
});
