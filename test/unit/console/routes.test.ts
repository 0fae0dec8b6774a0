import { describe, expect, it } from 'vitest';
import { loadNamedQueries, NamedQueryError } from '../../../lib/archive/namedQueries.js';
import { memoryAuditLog, rowsLedgerStats, rowsNotificationSearch } from '../../../lib/console/adapters.js';
import { newToken, staticTokenAuthenticator } from '../../../lib/console/auth.js';
import { type ConsoleDeps, createConsoleHandler } from '../../../lib/console/ConsoleApi.js';
import type { ConsoleRequest } from '../../../lib/console/http.js';
import { sortAndPage } from '../../../lib/console/paging.js';
import { type AuditQueries, AuditQueryFailed } from '../../../lib/console/ports.js';
import { SendproofError } from '../../../lib/domain/errors.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { MemoryLedger } from '../../../lib/ledger/MemoryLedger.js';
import { OperatorDecisions } from '../../../lib/reconcile/OperatorDecisions.js';
import { seedRow } from '../../support/consoleSeed.js';
import { ManualClock } from '../../support/manualClock.js';

// Each route module on the in-memory ledger (no server): the read models (readModels.ts), the operator's
// writes (decisions.ts), the audit reads (auditRoutes.ts), through the one router (ConsoleApi.ts).
const viewer = newToken();
const operator = newToken();

const world = async () => {
  const clock = new ManualClock(Date.parse('2026-12-01T12:00:00Z'));
  const ledger = new MemoryLedger();
  const rows = [];
  // 12 quarantined rows of acme-games (event ids q00..q11, one minute apart), 2 of clinic, 1 accepted.
  for (let i = 0; i < 12; i++) {
    rows.push(
      await seedRow(ledger, clock, { eventId: `q${String(i).padStart(2, '0')}`, state: 'quarantined' }),
    );
    clock.advance(60_000);
  }
  for (const id of ['c0', 'c1'])
    rows.push(
      await seedRow(ledger, clock, {
        eventId: id,
        state: 'quarantined',
        tenant: 'clinic',
        recipientRef: 'patient-9',
      }),
    );
  rows.push(await seedRow(ledger, clock, { eventId: 'a0', state: 'accepted', transport: 'rest' }));
  clock.advance(60_000);
  const log = memoryAuditLog();
  const deps: ConsoleDeps = {
    ledger,
    decisions: new OperatorDecisions({ ledger, purposes: new PurposeRegistry(), clock }),
    authenticate: staticTokenAuthenticator([
      { token: viewer, principal: { id: 'v', role: 'viewer' } },
      { token: operator, principal: { id: 'ana', role: 'operator' } },
    ]),
    clock,
    stats: rowsLedgerStats(
      () => ledger.rows(),
      () => clock.now(),
    ),
    search: rowsNotificationSearch(() => ledger.rows()),
    capabilities: () => undefined,
    auditLog: log,
  };
  return { clock, ledger, rows, deps, log };
};

const call = async (
  deps: ConsoleDeps,
  token: string,
  method: string,
  path: string,
  options: { query?: Record<string, string>; body?: unknown } = {},
) => {
  const request: ConsoleRequest = {
    method,
    path,
    query: options.query ?? {},
    headers: {
      host: '127.0.0.1:1',
      authorization: `Bearer ${token}`,
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    sourceIp: '127.0.0.1',
  };
  const response = await createConsoleHandler(deps)(request);
  // biome-ignore lint/suspicious/noExplicitAny: the answers are read loosely
  return { status: response.status, body: JSON.parse(String(response.body)) as any };
};

describe('paging', () => {
  it('sorts the whole list before cutting pages, keeps empty values last either way, and clamps the page', () => {
    const items = [{ k: 'b' }, { k: null }, { k: 'a' }, { k: 'c' }];
    const keyOf = { k: (i: { k: string | null }) => i.k };
    const tie = (i: { k: string | null }) => String(i.k);
    expect(
      sortAndPage(items, { sort: 'k', dir: 'asc', page: 1, pageSize: 2 }, keyOf, tie).items.map((i) => i.k),
    ).toEqual(['a', 'b']);
    const desc = sortAndPage(items, { sort: 'k', dir: 'desc', page: 9, pageSize: 3 }, keyOf, tie);
    expect([desc.page, desc.pages, desc.items.map((i) => i.k)]).toEqual([2, 2, [null]]);
  });
});

describe('read models (readModels.ts)', () => {
  it('sorts and pages an attention list over the whole list, not one storage page', async () => {
    const { deps } = await world();
    const page = async (query: Record<string, string>) =>
      (await call(deps, viewer, 'GET', '/api/attention', { query: { list: 'quarantined', ...query } })).body;
    const oldest = await page({ pageSize: '5' });
    expect(oldest).toMatchObject({
      total: 14,
      pages: 3,
      page: 1,
      sort: 'age',
      dir: 'desc',
      source: 'ledger (attention index)',
      window: 'now',
    });
    expect(oldest.items.map((r: { eventId: string }) => r.eventId)).toEqual([
      'q00',
      'q01',
      'q02',
      'q03',
      'q04',
    ]);
    const byEvent = await page({
      sort: 'eventId',
      dir: 'desc',
      page: '2',
      pageSize: '5',
      tenant: 'acme-games',
    });
    expect(byEvent.total).toBe(12);
    expect(byEvent.items.map((r: { eventId: string }) => r.eventId)).toEqual([
      'q06',
      'q05',
      'q04',
      'q03',
      'q02',
    ]);
    expect(
      (await call(deps, viewer, 'GET', '/api/attention', { query: { list: 'quarantined', sort: 'nope' } }))
        .status,
    ).toBe(400);
  });

  it('finds rows by event id, recipient ref, provider message id and dedupe key', async () => {
    const { deps, rows } = await world();
    const find = async (field: string, value: string) =>
      (await call(deps, viewer, 'GET', '/api/search', { query: { field, value } })).body.items.map(
        (r: { dedupeKey: string }) => r.dedupeKey,
      );
    const accepted = rows.at(-1)!;
    expect(await find('eventId', 'q03')).toEqual([rows[3]!.pk]);
    expect(await find('recipientRef', 'patient-9')).toHaveLength(2);
    expect(await find('providerMessageId', accepted.providerMessageId!)).toEqual([accepted.pk]);
    expect(await find('dedupeKey', accepted.pk)).toEqual([accepted.pk]);
    expect(await find('eventId', 'nothing')).toEqual([]);
    expect(
      (await call(deps, viewer, 'GET', '/api/search', { query: { field: 'email', value: 'x' } })).status,
    ).toBe(400);
    const { search: _, ...without } = deps;
    expect(
      (await call(without, viewer, 'GET', '/api/search', { query: { field: 'eventId', value: 'q03' } }))
        .status,
    ).toBe(501);
  });

  it("shows one tenant's ledger figures, lists the tenants, and says an archive figure is unavailable instead of zero", async () => {
    const { deps } = await world();
    const first = (await call(deps, viewer, 'GET', '/api/overview')).body;
    expect(first.tenants).toEqual(['acme-games', 'clinic']);
    expect(first.tenant).toBe('acme-games');
    expect(first.panels.byState).toMatchObject({ total: 13, source: 'ledger', window: 'now' });
    expect(first.panels.latency.ledgerAccepted.rows).toEqual([
      { purpose: 'password-reset', channel: 'email', rows: 1 },
    ]);
    expect(first.panels.statesOverTime).toMatchObject({
      rows: null,
      error: 'no audit archive is configured',
      window: { days: 7 },
    });
    expect(first.panels.slo).toBeUndefined();
    expect(first.panels.holds).toBeUndefined();
    const clinic = (await call(deps, viewer, 'GET', '/api/overview', { query: { tenant: 'clinic' } })).body;
    expect(clinic.panels.byState.rows).toEqual([{ state: 'quarantined', rows: 2, oldestAgeSeconds: 60 }]);
    expect(clinic.panels.human.manualShare).toMatchObject({ value: 0, decided: 0, waiting: 2 });
  });

  it('shows the SLO and holds panels only from a configured source, with that source named', async () => {
    const { deps } = await world();
    const figure = {
      purpose: 'password-reset',
      objective: 0.99,
      attainment: 0.995,
      budgetLeft: 0.5,
      good: 199,
      eligible: 200,
      window: { from: '2026-11-02', to: '2026-12-01', days: 30 },
    };
    const o = (
      await call(
        {
          ...deps,
          slo: { source: 'archive: named query slo', attainment: async () => [figure] },
          holds: {
            source: 'ledger: holds',
            open: async () => {
              throw new Error('holds table unreachable');
            },
          },
        },
        viewer,
        'GET',
        '/api/overview',
      )
    ).body;
    expect(o.panels.slo).toMatchObject({ source: 'archive: named query slo', rows: [figure], error: null });
    expect(o.panels.holds).toMatchObject({
      source: 'ledger: holds',
      rows: null,
      error: 'holds table unreachable',
    });
  });
});

describe('operator writes (decisions.ts)', () => {
  it('records one decision for several rows under the token, refuses viewers, and rate-limits per principal', async () => {
    const { deps, rows, log } = await world();
    const keys = rows.slice(0, 3).map((r) => r.pk);
    const body = { keys, outcome: 'rejected', reason: 'provider says bounced, OPS-9' };
    expect((await call(deps, viewer, 'POST', '/api/decisions', { body })).status).toBe(403);
    const done = await call(deps, operator, 'POST', '/api/decisions', { body });
    expect(done.body).toMatchObject({ decidedBy: 'operator:ana', recorded: 3, refused: 0 });
    expect((await deps.ledger.get(keys[0]!))?.history.at(-1)?.by).toBe('operator:ana');
    expect(
      (await call(deps, operator, 'POST', '/api/decisions', { body: { ...body, operator: 'mallory' } }))
        .status,
    ).toBe(400);
    const limited = { ...deps, decisionRowsPerMinute: 2 };
    const handlerDeps = limited;
    expect(
      (
        await call(handlerDeps, operator, 'POST', '/api/decisions', {
          body: { ...body, keys: rows.slice(3, 6).map((r) => r.pk) },
        })
      ).status,
    ).toBe(429);
    expect(log.entries.filter((e) => e.kind === 'denied').map((e) => e.status)).toEqual([403, 429]);
  });
});

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
