import type { NamedQuery } from '../archive/namedQueries.js';
import { onFirstUse } from '../onFirstUse.js';
import type { AuditQueries } from './ports.js';

/**
 * Audit queries whose engine (in AWS the Athena client and runner, lib/console/athenaAuditQueries.ts)
 * loads on the first run: the overview's archive figures, the SLO panel or a query the operator runs,
 * never at the console's cold start. The list of named queries needs no engine and is read on first use.
 * A failed load fails that run (the route answers as for any engine failure) and the next run loads again.
 */
export const lazyAuditQueries = (
  known: { engine: string; list: () => NamedQuery[] },
  load: () => Promise<AuditQueries>,
): AuditQueries => {
  const engine = onFirstUse(load);
  let queries: NamedQuery[] | undefined;
  return {
    engine: known.engine,
    list: () => (queries ??= known.list()),
    run: async (name, args) => (await engine()).run(name, args),
  };
};
