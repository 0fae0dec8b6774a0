import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { NamedQueryError } from '../archive/namedQueries.js';
import { SendproofError } from '../domain/errors.js';
import type { ConsoleDeps } from './deps.js';
import { AuditQueryFailed } from './ports.js';
import { BadRequest, day, json, parseBody, parseWith, problem, type Route } from './respond.js';

/**
 * The audit reads: the named queries over the archive (DuckDB locally, Athena in AWS, the same SQL) and
 * a notification's export bundle (archive objects, the signed digest chain segment and the public key,
 * as one JSON document that `sendproof audit verify --bundle FILE` checks offline).
 */

const TimelineQuery = z.strictObject({ key: z.string().check(z.minLength(1), z.maxLength(1024)) });

const RunQueryBody = z.strictObject({
  name: z.string().check(z.regex(/^[a-z][a-z0-9-]*$/)),
  args: z._default(z.array(z.string().check(z.maxLength(256))).check(z.maxLength(10)), []),
});

export const auditRoutes = (deps: ConsoleDeps): Route[] => [
  {
    method: 'GET',
    path: '/api/export',
    role: 'viewer',
    run: async (r) => {
      const { key } = parseWith(TimelineQuery, r.query);
      if (!deps.exportBundle) return problem(501, 'not_configured', 'no export bundle source is configured');
      const row = await deps.ledger.get(key, true);
      if (!row) return problem(404, 'not_found', 'no ledger row with this key');
      // The archive days the row can have transitions in: from its creation to today.
      const now = deps.clock.now();
      try {
        const bundle = await deps.exportBundle(key, {
          tenant: row.tenant,
          from: day(row.createdAt),
          to: day(now),
        });
        return json(200, bundle, {
          'content-disposition': `attachment; filename="sendproof-bundle-${row.idempotencyKey.slice(0, 16)}.json"`,
        });
      } catch (error) {
        if (error instanceof SendproofError && error.code === 'not_archived')
          return problem(404, 'not_archived', error.message);
        throw error;
      }
    },
  },
  {
    method: 'GET',
    path: '/api/queries',
    role: 'viewer',
    run: async () =>
      deps.audit
        ? json(200, {
            items: deps.audit
              .list()
              .map(({ name, description, parameters }) => ({ name, description, parameters })),
          })
        : problem(501, 'not_configured', 'no audit archive is configured'),
  },
  {
    method: 'POST',
    path: '/api/queries/run',
    role: 'viewer',
    run: async (r) => {
      const body = parseWith(RunQueryBody, parseBody(r));
      if (!deps.audit) return problem(501, 'not_configured', 'no audit archive is configured');
      if (!deps.audit.list().some((q) => q.name === body.name))
        return problem(404, 'not_found', 'no named query with this name');
      try {
        const result = await deps.audit.run(body.name, body.args);
        return json(200, {
          columns: result.columns,
          rows: result.rows.slice(0, 1000),
          truncated: result.rows.length > 1000,
        });
      } catch (error) {
        if (error instanceof NamedQueryError) throw new BadRequest('invalid_arguments', error.message);
        if (error instanceof AuditQueryFailed) return problem(502, 'query_failed', error.message);
        throw error;
      }
    },
  },
];
