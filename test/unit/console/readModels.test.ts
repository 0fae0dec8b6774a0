import { describe, expect, it } from 'vitest';
import { call, viewer, world } from '../../support/consoleWorld.js';

// lib/console/readModels.ts on the in-memory ledger: lists, search, the overview's ledger figures and panels.
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
