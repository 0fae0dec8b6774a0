import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import type { AuditResult } from '../archive/DuckDbAudit.js';
import { orderedByLedger } from '../archive/timelineOrder.js';
import { IdentifierSchema } from '../domain/intent.js';
import { ChannelSchema } from '../domain/purposes.js';
import type { DeliveryState } from '../domain/states.js';
import { expandFact } from '../evidence/facts.js';
import type { DeliveryRecord } from '../ledger/port.js';
import { clockedTimeline } from './clocks.js';
import type { ConsoleDeps } from './deps.js';
import { MAX_COLLECTED, pagingSchema, sortAndPage } from './paging.js';
import { SEARCH_FIELDS } from './ports.js';
import { day, json, parseWith, problem, type Route } from './respond.js';
import { ROW_SORTS, rowSortKeys, rowView } from './rowView.js';

/**
 * The viewer's read models: the overview (every figure with its source and window), the attention lists,
 * search, a notification's timeline (both clocks), the suppression list. Reads only.
 */

/** The attention lists are the attention index's states; `stalled` is the state the sweep writes. */
export const ATTENTION_LISTS = ['unknown', 'quarantined', 'retry_wait', 'stalled'] as const;
type AttentionList = (typeof ATTENTION_LISTS)[number];

const rowPaging = pagingSchema(ROW_SORTS, 'age');

const AttentionQuery = z.strictObject({
  list: z.enum(ATTENTION_LISTS),
  tenant: z.optional(z.string().check(z.maxLength(128))),
  purpose: z.optional(z.string().check(z.maxLength(128))),
  channel: z.optional(ChannelSchema),
  minAgeSeconds: z.optional(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(10 * 365 * 86_400))),
  ...rowPaging.shape,
  // The attention lists default to the oldest first: the row waiting longest is the one to look at.
  dir: z._default(z.enum(['asc', 'desc']), 'desc'),
});

const SearchQuery = z.strictObject({
  field: z.enum(SEARCH_FIELDS),
  value: z.string().check(z.trim(), z.minLength(1), z.maxLength(1024)),
  ...rowPaging.shape,
});

const TimelineQuery = z.strictObject({ key: z.string().check(z.minLength(1), z.maxLength(1024)) });

/** The tenant whose figures the overview shows (the archive is partitioned by tenant). */
const OverviewQuery = z.strictObject({
  tenant: z.optional(IdentifierSchema),
  bucket: z._default(z.enum(['hour', 'day']), 'day'),
});

export const readModelRoutes = (deps: ConsoleDeps): Route[] => {
  const view = (row: DeliveryRecord, now: number) => rowView(row, now, deps.capabilities);
  const days = deps.overviewDays ?? 7;
  const archiveSource = () =>
    deps.audit ? `archive (${deps.audit.engine ?? 'named queries'})` : 'archive (not configured)';

  const attention = async (request: Parameters<Route['run']>[0]) => {
    const q = parseWith(AttentionQuery, request.query);
    const now = deps.clock.now();
    // One attention index per list, read whole up to a bound so the sort covers the list. `stalled` is
    // the state the sweep writes when nothing can resume a row (lib/reconcile/Sweeper.ts), not a guess
    // from an age: an old `unknown` row still has its owner.
    const items: DeliveryRecord[] = [];
    let cursor: string | undefined;
    do {
      const page = await deps.ledger.listAttention(q.list as DeliveryState, {
        limit: 200,
        ...(cursor ? { cursor } : {}),
      });
      items.push(...page.items);
      cursor = page.cursor;
    } while (cursor && items.length < MAX_COLLECTED);
    const minAgeMs = (q.minAgeSeconds ?? 0) * 1000;
    const filtered = items.filter(
      (row) =>
        (!q.tenant || row.tenant === q.tenant) &&
        (!q.purpose || row.purpose === q.purpose) &&
        (!q.channel || row.channel === q.channel) &&
        now - (row.attnAt ?? row.updatedAt) >= minAgeMs,
    );
    const page = sortAndPage(filtered, q, rowSortKeys(now), (r) => r.pk, cursor !== undefined);
    return json(200, {
      list: q.list as AttentionList,
      source: 'ledger (attention index)',
      window: 'now',
      asOf: new Date(now).toISOString(),
      ...page,
      items: page.items.map((row) => view(row, now)),
    });
  };

  const search = async (request: Parameters<Route['run']>[0]) => {
    const q = parseWith(SearchQuery, request.query);
    if (!deps.search) return problem(501, 'not_configured', 'search is not configured for this console');
    const now = deps.clock.now();
    const found = await deps.search.find(q.field, q.value, MAX_COLLECTED);
    const page = sortAndPage(found.rows, q, rowSortKeys(now), (r) => r.pk, found.truncated);
    return json(200, {
      field: q.field,
      value: q.value,
      source: 'ledger',
      window: 'now (rows the ledger still holds; the archive keeps the rest: see the timeline)',
      asOf: new Date(now).toISOString(),
      ...page,
      items: page.items.map((row) => view(row, now)),
    });
  };

  const runAudit = async (name: string, args: readonly string[]): Promise<AuditResult | undefined> =>
    deps.audit ? deps.audit.run(name, args) : undefined;

  /** An archive figure: its rows, or why it has none (not configured, or the engine failed). */
  const archiveFigure = async (name: string, args: readonly string[]) => {
    if (!deps.audit) return { rows: null, error: 'no audit archive is configured' };
    try {
      const result = await runAudit(name, args);
      return { rows: result?.rows ?? [], error: null };
    } catch (error) {
      return { rows: null, error: error instanceof Error ? error.message : 'the query failed' };
    }
  };

  /** The circuits panel: every failover channel's providers in order, or why there are none to show. */
  const circuitsFigure = async (now: number) => {
    if (!deps.circuits) return null;
    const head = { source: deps.circuits.source, window: 'now', asOf: new Date(now).toISOString() };
    try {
      return { ...head, channels: await deps.circuits.circuits(now), error: null };
    } catch (error) {
      return { ...head, channels: null, error: error instanceof Error ? error.message : 'unavailable' };
    }
  };

  const overview = async (request: Parameters<Route['run']>[0]) => {
    const q = parseWith(OverviewQuery, request.query);
    const now = deps.clock.now();
    const asOf = new Date(now).toISOString();
    // The archive is partitioned by tenant: every figure on the overview is of one tenant, the ledger's
    // too, so that numbers which should agree are counted over the same rows. Default: the first tenant.
    const tenants = q.tenant ? undefined : (await deps.stats()).tenants;
    const tenant = q.tenant ?? tenants?.[0] ?? 'default';
    const from = day(now - (days - 1) * 86_400_000);
    const to = day(now);
    const range = [tenant, from, to];
    const [stats, dlqDepth, latency, distribution, states, facts, manual, duplicates, slo, holds, circuits] =
      await Promise.all([
        deps.stats(tenant),
        deps.dlqDepth
          ? deps.dlqDepth().then(
              (n) => ({ depth: n, error: null }),
              (e: unknown) => ({ depth: null, error: e instanceof Error ? e.message : 'unavailable' }),
            )
          : Promise.resolve(null),
        archiveFigure('intent-to-accepted-latency', range),
        archiveFigure('latency-distribution', range),
        archiveFigure('states-over-time', [...range, q.bucket]),
        archiveFigure('delivery-facts-daily', range),
        archiveFigure('manual-resolutions', range),
        archiveFigure('multiple-acceptances', range),
        deps.slo
          ? deps.slo.attainment(tenant, now).then(
              (rows) => ({ rows, error: null }),
              (e: unknown) => ({ rows: null, error: e instanceof Error ? e.message : 'unavailable' }),
            )
          : Promise.resolve(null),
        deps.holds
          ? deps.holds.open().then(
              (rows) => ({ rows, error: null }),
              (e: unknown) => ({ rows: null, error: e instanceof Error ? e.message : 'unavailable' }),
            )
          : Promise.resolve(null),
        circuitsFigure(now),
      ]);
    const ledgerNow = { source: 'ledger', window: 'now', asOf };
    const archiveWindow = { source: archiveSource(), window: { from, to, days }, asOf };
    const decided =
      (stats.byState.resolved_accepted ?? 0) +
      (stats.byState.resolved_rejected ?? 0) +
      (stats.byState.superseded ?? 0);
    const waiting = (stats.byState.unknown ?? 0) + (stats.byState.quarantined ?? 0);
    return json(200, {
      now: asOf,
      tenant,
      tenants: tenants ?? stats.tenants,
      panels: {
        byState: {
          ...ledgerNow,
          total: stats.rows,
          rows: Object.keys(stats.byState)
            .sort()
            .map((state) => ({
              state,
              rows: stats.byState[state],
              oldestAgeSeconds: stats.oldestAgeSeconds[state] ?? null,
            })),
        },
        dlq: dlqDepth ? { source: 'dead-letter queue (SQS)', window: 'now', asOf, ...dlqDepth } : null,
        statesOverTime: { ...archiveWindow, bucket: q.bucket, ...states },
        latency: {
          ...archiveWindow,
          /** The ledger's accepted rows per purpose and channel, now, beside the archive's count. */
          ledgerAccepted: { ...ledgerNow, rows: stats.acceptedBy ?? [] },
          percentiles: latency,
          distribution,
        },
        deliveryFacts: { ...archiveWindow, clock: 'provider', ...facts },
        human: {
          ...archiveWindow,
          manualDecisions: manual.rows ? manual.rows.length : null,
          notificationsDecided: manual.rows
            ? new Set(manual.rows.map((r) => String(r.dedupe_key))).size
            : null,
          duplicateAcceptances: duplicates.rows ? duplicates.rows.length : null,
          error: manual.error ?? duplicates.error,
          /** Of the rows that are or were waiting for a human, the share an operator settled (ledger, now). */
          manualShare: {
            ...ledgerNow,
            value: decided + waiting > 0 ? decided / (decided + waiting) : null,
            decided,
            waiting,
          },
        },
        ...(slo && deps.slo ? { slo: { source: deps.slo.source, asOf, ...slo } } : {}),
        ...(holds && deps.holds
          ? { holds: { source: deps.holds.source, window: 'now', asOf, ...holds } }
          : {}),
        ...(circuits ? { circuits } : {}),
      },
    });
  };

  const timeline = async (request: Parameters<Route['run']>[0]) => {
    const { key } = parseWith(TimelineQuery, request.query);
    const row = await deps.ledger.get(key, true);
    if (!row) return problem(404, 'not_found', 'no ledger row with this key');
    const now = deps.clock.now();
    const archive = await runAudit('explain-notification', [
      row.tenant,
      day(row.createdAt),
      day(now),
      key,
    ]).catch(() => undefined);
    const providerIds = [
      ...new Set([row.providerMessageId, ...row.history.map((h) => h.msg)].filter((v): v is string => !!v)),
    ];
    const iso = (ms: number) => new Date(ms).toISOString();
    return json(200, {
      row: view(row, now),
      links: {
        resendOf: row.resendOf ?? null,
        supersededBy: row.supersededBy ?? null,
        exportBundle: deps.exportBundle ? `/api/export?${new URLSearchParams({ key })}` : null,
      },
      history: row.history.map((h, i) => ({
        version: i + 1,
        state: h.s,
        at: iso(h.at),
        clock: 'ledger',
        by: h.by,
        why: h.why ?? null,
        msg: h.msg ?? null,
        attempt: h.n ?? null,
      })),
      /** The ledger's history and the provider's facts in the order the ledger saw them, each with its clock. */
      clocked: clockedTimeline(row).map((e) => ({
        kind: e.kind,
        what: e.what,
        clock: e.clock,
        at: iso(e.at),
        by: e.by,
        why: e.why ?? null,
        msg: e.msg ?? null,
        version: e.version,
        recordedAfter: e.recordedAfter ? { what: e.recordedAfter.what, at: iso(e.recordedAfter.at) } : null,
        providerEarlierByMs: e.providerEarlierByMs ?? null,
      })),
      providerIds,
      evidence: {
        // Ids of events that moved the row, then of its facts (stored in `delivery.h`, compact).
        eventIds: [
          ...new Set([
            ...(row.evidenceIds ?? []),
            ...(row.delivery?.h ?? []).map((f) => expandFact(f, row.providerMessageId).id),
          ]),
        ],
        entries: row.history
          .filter((h) => h.by.startsWith('evidence:'))
          .map((h) => ({ state: h.s, at: iso(h.at), by: h.by, why: h.why ?? null })),
      },
      archive: archive
        ? orderedByLedger(archive.rows).map(({ ledger_at_ms, ...r }) => ({
            ...r,
            ledger_at: iso(ledger_at_ms),
          }))
        : null,
    });
  };

  return [
    { method: 'GET', path: '/api/overview', role: 'viewer', run: overview },
    { method: 'GET', path: '/api/attention', role: 'viewer', run: attention },
    { method: 'GET', path: '/api/search', role: 'viewer', run: search },
    { method: 'GET', path: '/api/timeline', role: 'viewer', run: timeline },
    {
      method: 'GET',
      path: '/api/circuits',
      role: 'viewer',
      run: async () => {
        const figure = await circuitsFigure(deps.clock.now());
        return figure
          ? json(200, figure)
          : problem(501, 'not_configured', 'no provider circuits are configured for this console');
      },
    },
    {
      method: 'GET',
      path: '/api/suppressions',
      role: 'viewer',
      run: async () =>
        deps.suppressions
          ? json(200, { source: 'suppression list', window: 'now', items: await deps.suppressions() })
          : problem(501, 'not_configured', 'no suppression table is configured'),
    },
  ];
};
