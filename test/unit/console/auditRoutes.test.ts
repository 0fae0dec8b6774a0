import { describe, expect, it } from 'vitest';
import { loadNamedQueries, NamedQueryError } from '../../../lib/archive/namedQueries.js';
import type { ConsoleDeps } from '../../../lib/console/ConsoleApi.js';
import { type AuditQueries, AuditQueryFailed } from '../../../lib/console/ports.js';
import { SendproofError } from '../../../lib/domain/errors.js';
import { call, viewer, world } from '../../support/consoleWorld.js';

// lib/console/auditRoutes.ts: the named queries and the export bundle.
describe('audit reads (auditRoutes.ts)', () => {
  const queries = loadNamedQueries();
  const failing = (error: Error): AuditQueries => ({
    list: () => queries,
    run: async () => {
      throw error;
    },
  });

  it('answers 404 for an unknown query, 400 for bad arguments, 502 when the engine fails', async () => {
    const { deps } = await world();
    const run = (audit: AuditQueries, name: string) =>
      call({ ...deps, audit }, viewer, 'POST', '/api/queries/run', { body: { name, args: [] } });
    expect((await run(failing(new Error('x')), 'no-such-query')).status).toBe(404);
    expect(
      (await run(failing(new NamedQueryError('day_from must be YYYY-MM-DD')), 'channel-outcomes-daily')).body,
    ).toMatchObject({
      error: 'invalid_arguments',
    });
    expect(
      (await run(failing(new AuditQueryFailed('Athena query FAILED: boom')), 'channel-outcomes-daily'))
        .status,
    ).toBe(502);
  });

  it('exports a bundle for the row named, 404 when the archive has none yet, 501 when no export is configured', async () => {
    const { deps, rows } = await world();
    const key = rows[0]!.pk;
    expect((await call(deps, viewer, 'GET', '/api/export', { query: { key } })).status).toBe(501);
    const scopes: unknown[] = [];
    const exportBundle: ConsoleDeps['exportBundle'] = async (subject, scope) => {
      scopes.push({ subject, ...scope });
      throw new SendproofError('permanent', 'not_archived', `no archived transition of ${subject}`);
    };
    const answer = await call({ ...deps, exportBundle }, viewer, 'GET', '/api/export', { query: { key } });
    expect(answer).toMatchObject({ status: 404, body: { error: 'not_archived' } });
    expect(scopes).toEqual([{ subject: key, tenant: 'acme-games', from: '2026-12-01', to: '2026-12-01' }]);
    expect(
      (await call({ ...deps, exportBundle }, viewer, 'GET', '/api/export', { query: { key: 'nope' } }))
        .status,
    ).toBe(404);
  });
});
