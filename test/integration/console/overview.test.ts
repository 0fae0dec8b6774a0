import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirStore } from '../../../lib/archive/store.js';
import {
  dynamoLedgerStats,
  dynamoNotificationSearch,
  memoryAuditLog,
} from '../../../lib/console/adapters.js';
import { newToken, staticTokenAuthenticator } from '../../../lib/console/auth.js';
import { type ConsoleDeps, createConsoleHandler } from '../../../lib/console/ConsoleApi.js';
import { duckDbAuditQueries } from '../../../lib/console/duckDbAuditQueries.js';
import { sloPanelReadModel } from '../../../lib/console/sloPanel.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import type { EvidenceFact } from '../../../lib/evidence/facts.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../../lib/ledger/DynamoOperatorQueries.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { OperatorDecisions } from '../../../lib/reconcile/OperatorDecisions.js';
import { archiveRows } from '../../support/consoleArchive.js';
import { seedRow } from '../../support/consoleSeed.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';
import { ManualClock } from '../../support/manualClock.js';

// One overview, consistent numbers: a known mix on DynamoDB Local, archived with the archiver's own
// derivation, the archive panels run by DuckDB over it (the named queries as written), and every panel's
// numbers checked against the mix, on a fixed clock so the latency buckets and hours are exact.
const T0 = Date.parse('2026-12-01T09:10:00.000Z');
const clock = new ManualClock(T0);
const token = newToken();
let deps: ConsoleDeps;
let dir: string;
const rows: DeliveryRecord[] = [];

beforeAll(async () => {
  const { raw, doc } = localDynamo();
  const table = await createLedgerTable(raw, 'overview');
  const ledger = new DynamoLedger(doc, table);
  const evidence = new DynamoEvidenceStore(doc, table);
  const seed = (eventId: string, state: Parameters<typeof seedRow>[2]['state']) =>
    seedRow(ledger, clock, {
      eventId,
      state,
      transport: 'rest',
      tenant: 'mix-co',
      recipientRef: `m-${eventId}`,
    });
  // 09:10 — four accepted resets; provider facts 700 ms, 800 ms, 45 s and 2 s after their claim
  const facts: Array<[EvidenceFact, number]> = [
    ['delivered', 700],
    ['bounced_permanent', 800],
    ['delivered', 45_000],
    ['complained', 2_000],
  ];
  for (const [i, [fact, after]] of facts.entries()) {
    const row = await seed(`a${i}`, 'accepted');
    const written = await evidence.addFact(row, {
      f: fact,
      at: row.createdAt + after,
      by: 'evidence:rest',
      why: `rest:${fact}`,
      id: `rest:m${i}:${fact}`,
      msg: `sim-a${i}`,
    });
    if (written.kind !== 'ok') throw new Error(`fact on ${row.pk}: ${written.kind}`);
  }
  // 10:10 — one unknown, two quarantined, one retry_wait
  clock.set(T0 + 3_600_000);
  for (const [id, state] of [
    ['u0', 'unknown'],
    ['q0', 'quarantined'],
    ['q1', 'quarantined'],
    ['r0', 'retry_wait'],
  ] as const)
    await seed(id, state);
  // 10:20 — an operator settles one quarantined row
  clock.set(T0 + 4_200_000);
  const decisions = new OperatorDecisions({ ledger, purposes: new PurposeRegistry(), clock });
  const q1 = (await new DynamoOperatorQueries(doc, table).findByEvent('q1'))[0]!;
  await decisions.decide({
    dedupeKey: q1.pk,
    outcome: 'accepted',
    reason: 'provider console shows it delivered',
    operator: 'ana',
  });
  rows.push(...(await new DynamoOperatorQueries(doc, table).rows()));
  dir = await mkdtemp(join(tmpdir(), 'sendproof-overview-'));
  await archiveRows(new DirStore(dir), rows);
  clock.set(T0 + 4_800_000);
  const audit = duckDbAuditQueries(dir);
  deps = {
    ledger,
    decisions,
    authenticate: staticTokenAuthenticator([{ token, principal: { id: 'v', role: 'viewer' } }]),
    clock,
    stats: dynamoLedgerStats(doc, table, () => clock.now()),
    search: dynamoNotificationSearch(doc, table, ledger),
    capabilities: () => undefined,
    auditLog: memoryAuditLog(),
    audit,
    // As lib/console/wiring.ts wires it, locally and in AWS: the SLO read model over the same archive.
    slo: sloPanelReadModel({ audit, purposes: new PurposeRegistry(), clock }),
  };
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const get = async (path: string, query: Record<string, string> = {}) => {
  const response = await createConsoleHandler(deps)({
    method: 'GET',
    path,
    query,
    headers: { host: '127.0.0.1:1', authorization: `Bearer ${token}` },
    sourceIp: '127.0.0.1',
  });
  // biome-ignore lint/suspicious/noExplicitAny: read loosely
  return JSON.parse(String(response.body)) as any;
};
const counts = (list: Array<Record<string, unknown>>, key: string, value: string) =>
  Object.fromEntries(list.map((r) => [String(r[key]), Number(r[value])]));

describe('the overview of a known mix', () => {
  it("every panel's numbers are the mix's, and the figures that should agree do", async () => {
    // Act
    const o = await get('/api/overview', { tenant: 'mix-co', bucket: 'hour' });
    const p = o.panels;

    // Assess: ledger, now
    expect(o.tenants).toEqual(['mix-co']);
    expect(p.byState).toMatchObject({ source: 'ledger', window: 'now', total: 8 });
    expect(counts(p.byState.rows, 'state', 'rows')).toEqual({
      accepted: 4,
      quarantined: 1,
      resolved_accepted: 1,
      retry_wait: 1,
      unknown: 1,
    });
    // The attention lists hold exactly the rows the state counts say
    for (const list of ['unknown', 'quarantined', 'retry_wait'])
      expect((await get('/api/attention', { list })).total, list).toBe(
        counts(p.byState.rows, 'state', 'rows')[list],
      );

    // Archive, last 7 days, per hour (the ledger's clock)
    expect(p.statesOverTime).toMatchObject({
      source: 'archive (DuckDB over the local archive mirror)',
      window: { from: '2026-11-25', to: '2026-12-01', days: 7 },
      bucket: 'hour',
      error: null,
    });
    const byHour = (hour: string) =>
      counts(
        p.statesOverTime.rows.filter((r: { bucket: string }) => r.bucket === hour),
        'state',
        'transitions',
      );
    expect(byHour('2026-12-01T09:00Z')).toEqual({ claimed: 4, dispatching: 4, accepted: 4 });
    expect(byHour('2026-12-01T10:00Z')).toEqual({
      claimed: 4,
      dispatching: 4,
      unknown: 3,
      quarantined: 2,
      retry_wait: 1,
      resolved_accepted: 1,
    });
    // Delivery facts per day (the provider's clock)
    // (counts as the engine returns them: numbers or numeric strings, as the page's num() reads them)
    expect(
      p.deliveryFacts.rows.map((r: Record<string, string>) => ({
        day: r.day,
        channel: r.channel,
        delivered: Number(r.delivered),
        bounced: Number(r.bounced),
        complained: Number(r.complained),
        failed: Number(r.failed),
      })),
    ).toEqual([{ day: '2026-12-01', channel: 'email', delivered: 2, bounced: 1, complained: 1, failed: 0 }]);
    // Latency: the ledger's 4 accepted rows are the archive's 4 accepted notifications
    expect(p.latency.ledgerAccepted.rows).toEqual([{ purpose: 'password-reset', channel: 'email', rows: 4 }]);
    expect(p.latency.percentiles.rows).toHaveLength(1);
    expect(Number(p.latency.percentiles.rows[0].accepted)).toBe(4);
    const dist = (stage: string) =>
      counts(
        p.latency.distribution.rows.filter((r: { stage: string }) => r.stage === stage),
        'le_ms',
        'notifications',
      );
    expect(dist('accepted')).toEqual({ 100: 4 });
    expect(dist('delivered')).toEqual({ 1000: 1, 60000: 1 });
    // Decided by a human
    expect(p.human).toMatchObject({
      manualDecisions: 1,
      notificationsDecided: 1,
      duplicateAcceptances: 0,
      error: null,
    });
    expect(p.human.manualShare).toMatchObject({ decided: 1, waiting: 2 });
    expect(p.human.manualShare.value).toBeCloseTo(1 / 3);
    // No DLQ configured here: the panel is absent, not a zero
    expect(p.dlq).toBeNull();

    // SLO attainment and budget (archive, each purpose's own 28-day window ending now). Resets: six
    // decided acceptance — a0..a3 accepted in time, q0 and q1 quarantined first (q1's later human
    // settle does not undo that); u0 and r0 are undecided. Delivery: four reported, three good
    // (delivered 0.7 s, delivered 45 s, complained), one bounced. Four accepted, none twice.
    expect(p.slo).toMatchObject({
      source: 'archive (DuckDB over the local archive mirror): named query slo-attainment',
      error: null,
    });
    const slo = (purpose: string, objectiveName: string) =>
      p.slo.rows.filter(
        (r: Record<string, unknown>) =>
          r.purpose === purpose && r.objectiveName === objectiveName && r.channel === undefined,
      );
    const window = {
      from: new Date(clock.now() - 28 * 86_400_000).toISOString(),
      to: new Date(clock.now()).toISOString(),
      days: 28,
    };
    const [accepted] = slo('password-reset', 'accepted');
    expect(accepted).toEqual({
      purpose: 'password-reset',
      objectiveName: 'accepted',
      objective: 0.99,
      good: 4,
      eligible: 6,
      attainment: 4 / 6,
      // budget 6 × 1 % = 0.06 messages, 2 missed: overspent
      budgetLeft: expect.closeTo((0.06 - 2) / 0.06, 6),
      window,
    });
    expect(slo('password-reset', 'delivered')).toEqual([
      expect.objectContaining({ objective: 0.99, good: 3, eligible: 4, attainment: 3 / 4 }),
    ]);
    // The duplicate objective agrees with the human panel's multiple-acceptances and the ledger's accepted rows
    const [duplicates] = slo('password-reset', 'duplicates');
    expect(duplicates).toMatchObject({ good: 4, eligible: 4, attainment: 1, budgetLeft: 1 });
    expect(duplicates.eligible - duplicates.good).toBe(p.human.duplicateAcceptances);
    expect(duplicates.eligible).toBe(Number(p.latency.percentiles.rows[0].accepted));
    // One channel measured: no per-channel rows repeating the total
    expect(p.slo.rows.filter((r: { channel?: string }) => r.channel !== undefined)).toEqual([]);
    // Purposes with no messages in the window say so: nothing judged, not 0 % or 100 %
    for (const purpose of ['receipt', 'health-report'])
      for (const r of p.slo.rows.filter((r: { purpose: string }) => r.purpose === purpose))
        expect(r, `${purpose} ${r.objectiveName}`).toMatchObject({
          eligible: 0,
          good: 0,
          attainment: null,
          budgetLeft: null,
        });
    expect(new Set(p.slo.rows.map((r: { purpose: string }) => r.purpose))).toEqual(
      new Set(['password-reset', 'receipt', 'health-report']),
    );
  });

  it('per day the states add up to the same transitions', async () => {
    const o = await get('/api/overview', { tenant: 'mix-co', bucket: 'day' });
    expect(counts(o.panels.statesOverTime.rows, 'state', 'transitions')).toEqual({
      claimed: 8,
      dispatching: 8,
      accepted: 4,
      unknown: 3,
      quarantined: 2,
      retry_wait: 1,
      resolved_accepted: 1,
    });
    expect(o.panels.statesOverTime.rows.every((r: { bucket: string }) => r.bucket === '2026-12-01')).toBe(
      true,
    );
  });
});
