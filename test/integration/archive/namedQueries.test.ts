import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDbAudit } from '../../../lib/archive/DuckDbAudit.js';
import { loadNamedQueries, type NamedQuery } from '../../../lib/archive/namedQueries.js';
import { batchObjectKey } from '../../../lib/archive/objectKey.js';
import { ARCHIVE_COLUMNS } from '../../../lib/archive/schema.js';
import { DirStore } from '../../../lib/archive/store.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { DAY1, DAY2, KEY, writeBatch, writeScenarioArchive } from '../../fixtures/archive/scenario.js';
import { at, notificationRecords } from '../../fixtures/archive/streamRecords.js';
import { archiveRows } from '../../support/consoleArchive.js';

// Real DuckDB (@duckdb/node-api, in memory) over a fixture archive written with the archiver's own
// transition derivation, object keys and line format. The SQL is the text in queries/, unchanged.
describe('named audit queries on DuckDB', () => {
  let dir: string;
  let audit: DuckDbAudit;
  const queries = new Map<string, NamedQuery>();
  const run = (name: string, ...args: string[]) => audit.runNamed(queries.get(name)!, args);
  const TENANT = 'default';
  const ALL = [TENANT, DAY1, DAY2];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sendproof-archive-queries-'));
    await writeScenarioArchive(dir);
    audit = await DuckDbAudit.open(dir);
    for (const q of loadNamedQueries()) queries.set(q.name, q);
  });

  afterAll(async () => {
    audit?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('every query in queries/ is covered by a test below', () => {
    // Assess
    expect([...queries.keys()]).toEqual([
      'accepted-not-delivered',
      'cancellations', // test/integration/archive/cancellations.test.ts
      'channel-outcomes-daily',
      'delivery-facts-daily', // with facts: test/integration/console/overview.test.ts
      'explain-notification',
      'intent-to-accepted-latency',
      'latency-distribution',
      'manual-resolutions',
      'multiple-acceptances',
      'slo-attainment', // test/integration/slo/attainment.test.ts
      'states-over-time',
      'unknown-quarantined-older-than',
    ]);
  });

  it('states-over-time counts transitions into each state per day and hour, agreeing with channel-outcomes-daily', async () => {
    // Act
    const perDay = await run('states-over-time', ...ALL, 'day');
    const perHour = await run('states-over-time', ...ALL, 'hour');
    const outcomes = await run('channel-outcomes-daily', ...ALL);
    // Assess: every terminal outcome of a day is that day's transitions into the state, all channels
    const of = (rows: typeof perDay.rows, bucket: string, state: string) =>
      rows
        .filter((r) => r.bucket === bucket && r.state === state)
        .reduce((n, r) => n + Number(r.transitions), 0);
    for (const o of outcomes.rows)
      expect(of(perDay.rows, String(o.day), String(o.outcome)), `${o.day} ${o.outcome}`).toBe(
        outcomes.rows
          .filter((x) => x.day === o.day && x.outcome === o.outcome)
          .reduce((n, x) => n + Number(x.notifications), 0),
      );
    // A, B, C, D, E, F, H, I claimed on day 1; F (again) and G on day 2
    expect([of(perDay.rows, DAY1, 'claimed'), of(perDay.rows, DAY2, 'claimed')]).toEqual([8, 2]);
    // A and B claimed at 10:00 of day 1; the hours add up to the days
    expect(of(perHour.rows, `${DAY1}T10:00Z`, 'claimed')).toBeGreaterThanOrEqual(2);
    const total = (rows: typeof perDay.rows) => rows.reduce((n, r) => n + Number(r.transitions), 0);
    expect(total(perHour.rows)).toBe(total(perDay.rows));
    expect(perDay.rows.some((r) => String(r.state).startsWith('delivery:'))).toBe(false);
  });

  it('latency-distribution buckets each accepted notification once, as intent-to-accepted-latency counts them', async () => {
    // Act
    const dist = await run('latency-distribution', ...ALL);
    const latency = await run('intent-to-accepted-latency', ...ALL);
    // Assess
    for (const l of latency.rows)
      expect(
        dist.rows
          .filter((d) => d.stage === 'accepted' && d.purpose === l.purpose && d.channel === l.channel)
          .reduce((n, d) => n + Number(d.notifications), 0),
        `${l.purpose} ${l.channel}`,
      ).toBe(Number(l.accepted));
    // H and I: password resets accepted 1.5 s and 3 s after their claim
    const resets = dist.rows.filter(
      (d) => d.stage === 'accepted' && d.purpose === 'password-reset' && d.channel === 'email',
    );
    expect(resets.find((d) => Number(d.le_ms) === 2500)?.notifications).toBeGreaterThanOrEqual(1);
    expect(resets.find((d) => Number(d.le_ms) === 5000)?.notifications).toBeGreaterThanOrEqual(1);
    // No delivery fact in this archive: no delivered stage, and no facts per day
    expect(dist.rows.filter((d) => d.stage === 'delivered')).toEqual([]);
    expect((await run('delivery-facts-daily', ...ALL)).rows).toEqual([]);
  });

  it('explain-notification by dedupe key returns that row’s transitions in order with the transport message id', async () => {
    // Act
    const { rows } = await run('explain-notification', ...ALL, KEY.A);

    // Assess
    expect(rows.map((r) => [r.version, r.from_state, r.to_state, r.actor, r.transport_message_id])).toEqual([
      [1, null, 'claimed', 'dispatch:w1', null],
      [2, 'claimed', 'dispatching', 'dispatch:w1', null],
      [3, 'dispatching', 'unknown', 'dispatch:w1', null],
      [4, 'unknown', 'accepted', 'evidence:ses-events', 'ses-msg-A'],
    ]);
    expect(rows[2]).toMatchObject({ reason: 'provider_timeout_after_send', transport: 'ses', attempt: 1 });
    expect(rows[3]).toMatchObject({
      transition_at: '2026-11-30T10:01:00.000Z',
      transition_at_ms: 1796032860000,
    });
  });

  it('explain-notification by event id interleaves every channel of the event by time', async () => {
    // Act
    const { rows } = await run('explain-notification', ...ALL, 'evt-A');

    // Assess
    expect(rows.map((r) => `${String(r.dedupe_key).split(':')[4]}:${r.to_state}`)).toEqual([
      'email:claimed',
      'sms:claimed',
      'email:dispatching',
      'sms:dispatching',
      'sms:accepted',
      'email:unknown',
      'email:accepted',
    ]);
  });

  it('unknown-quarantined-older-than returns only rows whose latest state waits and is older than the cut-off', async () => {
    // Act: C is quarantined since 09:15:05, D unknown since 11:00:05, A was unknown but is now accepted.
    const { rows } = await run(
      'unknown-quarantined-older-than',
      ...ALL,
      String(Date.parse(`${DAY1}T10:30:00Z`)),
    );
    const later = await run(
      'unknown-quarantined-older-than',
      ...ALL,
      String(Date.parse(`${DAY2}T00:00:00Z`)),
    );

    // Assess
    expect(rows).toEqual([
      expect.objectContaining({
        dedupe_key: KEY.C,
        state: 'quarantined',
        version: 4,
        since: '2026-11-30T09:15:05.000Z',
        since_ms: Date.parse('2026-11-30T09:15:05Z'),
        actor: 'reconciler:run-1',
        reason: 'ambiguity_deadline_passed',
      }),
    ]);
    // E was quarantined at 22:15:05 but an operator resolved it the next day, so it is not listed.
    expect(later.rows.map((r) => [r.dedupe_key, r.state])).toEqual([
      [KEY.C, 'quarantined'],
      [KEY.D, 'unknown'],
    ]);
  });

  it('multiple-acceptances finds the receipt sent again after its row was TTL-deleted and re-claimed', async () => {
    // Act
    const { rows } = await run('multiple-acceptances', ...ALL);

    // Assess
    expect(rows).toEqual([
      {
        dedupe_key: KEY.F,
        event_id: 'evt-F',
        channel: 'email',
        acceptances: 2,
        distinct_message_ids: 2,
        message_ids: ['ses-msg-F1', 'ses-msg-F2'],
        first_accepted_at: '2026-11-30T08:00:01.000Z',
        last_accepted_at: '2026-12-01T08:00:00.600Z',
      },
    ]);
  });

  it('channel-outcomes-daily counts terminal outcomes per channel on the day they happened', async () => {
    // Act
    const both = await run('channel-outcomes-daily', ...ALL);
    const second = await run('channel-outcomes-daily', TENANT, DAY2, DAY2);

    // Assess
    expect(both.rows).toEqual([
      { day: DAY1, channel: 'email', outcome: 'accepted', notifications: 4 },
      { day: DAY1, channel: 'sms', outcome: 'accepted', notifications: 1 },
      { day: DAY2, channel: 'email', outcome: 'accepted', notifications: 1 },
      { day: DAY2, channel: 'email', outcome: 'resolved_accepted', notifications: 1 },
      { day: DAY2, channel: 'sms', outcome: 'suppressed', notifications: 1 },
    ]);
    expect(second.rows).toEqual(both.rows.slice(2));
  });

  it('manual-resolutions lists operator transitions with the operator id and the reason', async () => {
    // Act
    const { rows } = await run('manual-resolutions', ...ALL);
    const dayOne = await run('manual-resolutions', TENANT, DAY1, DAY1);

    // Assess
    expect(rows).toEqual([
      {
        transition_at: '2026-12-01T09:00:00.000Z',
        dedupe_key: KEY.E,
        event_id: 'evt-E',
        channel: 'email',
        from_state: 'quarantined',
        to_state: 'resolved_accepted',
        operator: 'alice',
        reason: 'provider_dashboard_shows_delivered',
        version: 5,
      },
    ]);
    expect(dayOne.rows).toEqual([]);
  });

  it('intent-to-accepted-latency gives percentiles of claim-to-acceptance per channel and purpose', async () => {
    // Act: email resets took 60 s (A, after an unknown), 1.5 s (H) and 3 s (I); the SMS 2 s; the receipt 1 s.
    const { rows } = await run('intent-to-accepted-latency', ...ALL);

    // Assess
    expect(rows).toEqual([
      {
        channel: 'email',
        purpose: 'password-reset',
        accepted: 3,
        p50_ms: 3000,
        p90_ms: 60000,
        p99_ms: 60000,
        max_ms: 60000,
      },
      {
        channel: 'email',
        purpose: 'receipt',
        accepted: 1,
        p50_ms: 1000,
        p90_ms: 1000,
        p99_ms: 1000,
        max_ms: 1000,
      },
      {
        channel: 'sms',
        purpose: 'password-reset',
        accepted: 1,
        p50_ms: 2000,
        p90_ms: 2000,
        p99_ms: 2000,
        max_ms: 2000,
      },
    ]);
  });

  it('accepted-not-delivered lists acceptances before the cut-off that no delivery fact followed', async () => {
    // Act: the scenario has no post-acceptance facts, so every acceptance before the cut-off is listed
    const { rows } = await run('accepted-not-delivered', ...ALL, String(Date.parse(`${DAY1}T10:00:03Z`)));
    // Assess
    expect(rows.map((r) => r.dedupe_key)).toEqual([KEY.F, KEY.B]);
    expect(rows[1]).toMatchObject({ latest_fact: null, channel: 'sms' });
  });

  it('multiple-acceptances does not count an accepted→accepted annotation as a second acceptance; two ids or two arrivals are', async () => {
    // Prepare: rows as the ledger writes them, archived by the archiver's own derivation (transitionsOf).
    // An annotation is a history entry in the row's current state (cancel_too_late on an accepted row,
    // an evidence note): an `accepted → accepted` line, one version further, with no or the same id.
    const annotatedDir = await mkdtemp(join(tmpdir(), 'sendproof-archive-annotated-'));
    const t = Date.parse(`${DAY1}T10:00:00.000Z`);
    const row = (eventId: string, steps: Array<[string, string | undefined]>, providerMessageId: string) => {
      const history = steps.map(([state, msg], i) => ({
        s: state,
        at: t + i * 1000,
        by: state === 'accepted' && i > 2 ? 'evidence:ses' : 'dispatch:1',
        why: `step-${i}`,
        ...(msg ? { msg } : {}),
      }));
      return {
        pk: `default:receipt:${eventId}:r-1:email`,
        kind: 'delivery',
        eventId,
        tenant: TENANT,
        purpose: 'receipt',
        channel: 'email',
        recipientRef: 'r-1',
        state: history.at(-1)!.s,
        version: history.length,
        history,
        providerMessageId,
        transport: 'ses',
        createdAt: t,
        updatedAt: history.at(-1)!.at,
        reqAt: t,
      } as unknown as DeliveryRecord;
    };
    const rows = [
      // accepted, then two annotations in state accepted (no id; the same id): one acceptance
      row(
        'annotated',
        [
          ['claimed', undefined],
          ['dispatching', undefined],
          ['accepted', 'ses-a1'],
          ['accepted', undefined],
          ['accepted', 'ses-a1'],
        ],
        'ses-a1',
      ),
      // held by the provider, settled when its send time passed, then annotated: one acceptance
      row(
        'handoff',
        [
          ['claimed', undefined],
          ['dispatching', undefined],
          ['provider_scheduled', 'ses-h1'],
          ['accepted', undefined],
          ['accepted', undefined],
        ],
        'ses-h1',
      ),
      // accepted under one id, then an accepted line under another: two acceptances
      row(
        'two-ids',
        [
          ['claimed', undefined],
          ['dispatching', undefined],
          ['accepted', 'ses-t1'],
          ['accepted', 'ses-t2'],
        ],
        'ses-t2',
      ),
      // into accepted twice from a non-accepted state, the provider answering the same id: two acceptances
      row(
        'twice',
        [
          ['claimed', undefined],
          ['dispatching', undefined],
          ['accepted', 'ses-w1'],
          ['dispatching', undefined],
          ['accepted', 'ses-w1'],
        ],
        'ses-w1',
      ),
    ];
    await archiveRows(new DirStore(annotatedDir), rows);
    const annotatedAudit = await DuckDbAudit.open(annotatedDir);
    try {
      // Act
      const { rows: found } = await annotatedAudit.runNamed(queries.get('multiple-acceptances')!, ALL);

      // Assess
      expect(
        found.map((r) => [r.event_id, Number(r.acceptances), Number(r.distinct_message_ids), r.message_ids]),
      ).toEqual([
        ['twice', 2, 1, ['ses-w1', 'ses-w1']],
        ['two-ids', 2, 2, ['ses-t1', 'ses-t2']],
      ]);
    } finally {
      annotatedAudit.close();
      await rm(annotatedDir, { recursive: true, force: true });
    }
  });

  it('keeps two delivery facts of one version recorded in the same millisecond: a delivered row is not listed as undelivered', async () => {
    // Prepare: the lines a pull feed's `sent` and `delivered` produce when recorded in one millisecond
    // (seen on a local run), next to the acceptance one millisecond later.
    const factsDir = await mkdtemp(join(tmpdir(), 'sendproof-archive-facts-'));
    const key = 'clinic:health-report:report-42:patient-9:sms';
    const at = Date.parse(`${DAY1}T11:07:56.736Z`);
    const line = (version: number, from: string | null, to: string, ms: number, kind = 'delivery') => {
      const base = Object.fromEntries(ARCHIVE_COLUMNS.map((c) => [c.name, null]));
      return {
        ...base,
        schema_version: 1,
        dedupe_key: key,
        record_kind: kind,
        event_id: 'report-42',
        purpose: 'health-report',
        channel: 'sms',
        from_state: from,
        to_state: to,
        version,
        transition_at: new Date(ms).toISOString(),
        transition_at_ms: ms,
        actor: kind === 'delivery_fact' ? 'evidence:rest' : 'dispatch:1',
        transport: 'rest',
        transport_message_id: 'sim_1',
        stream_sequence_number: String(100 + version * 10 + ms - at),
      };
    };
    const lines = [
      line(1, null, 'dispatching', at - 70),
      line(2, 'accepted', 'delivery:sent', at, 'delivery_fact'),
      line(2, 'accepted', 'delivery:delivered', at, 'delivery_fact'),
      line(2, 'dispatching', 'accepted', at + 1),
    ];
    await new DirStore(factsDir).put(
      batchObjectKey({ tenant: 'clinic', date: DAY1 }, '100', '200'),
      gzipSync(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`),
    );
    const factsAudit = await DuckDbAudit.open(factsDir);
    try {
      // Act
      const undelivered = await factsAudit.runNamed(queries.get('accepted-not-delivered')!, [
        'clinic',
        DAY1,
        DAY2,
        String(at + 60_000),
      ]);
      const explained = await factsAudit.runNamed(queries.get('explain-notification')!, [
        'clinic',
        DAY1,
        DAY2,
        key,
      ]);
      // Assess
      expect(undelivered.rows).toEqual([]);
      // Both facts, once each (their order within the millisecond is not defined).
      expect(explained.rows.map((r) => r.to_state).sort()).toEqual([
        'accepted',
        'delivery:delivered',
        'delivery:sent',
        'dispatching',
      ]);
    } finally {
      factsAudit.close();
      await rm(factsDir, { recursive: true, force: true });
    }
  });

  it('slo-attainment: the receipt re-claimed after its TTL is two messages in time and one duplicate; resets by their objective', async () => {
    // Act: F's two lifetimes were accepted 1 s and 0.6 s after the claim, published 0.5 s before it.
    const receipt = await run(
      'slo-attainment',
      ...ALL,
      'receipt',
      '0',
      String(at(`${DAY2}T23:59:59Z`)),
      '120000',
      '600000',
    );
    // H and I (resets) took 2 s and 3.5 s from their request: a 3 s objective passes H only.
    const resets = await run(
      'slo-attainment',
      ...ALL,
      'password-reset',
      '0',
      String(at(`${DAY2}T23:59:59Z`)),
      '3000',
      '300000',
    );

    // Assess
    expect(receipt.rows).toEqual([
      {
        channel: 'email',
        acceptance_decided: 2,
        acceptance_good: 2,
        accept_p99_ms: 1_500,
        delivery_decided: 0,
        delivery_good: 0,
        delivery_unreported: 2,
        accepted_messages: 1,
        duplicate_messages: 1,
      },
    ]);
    expect(resets.rows).toEqual([
      expect.objectContaining({
        channel: 'email',
        acceptance_decided: 2,
        acceptance_good: 1,
        duplicate_messages: 0,
      }),
    ]);
  });

  it('an empty archive folder answers every query with no rows instead of failing', async () => {
    // Prepare
    const empty = await mkdtemp(join(tmpdir(), 'sendproof-archive-empty-'));
    const nothing = await DuckDbAudit.open(empty);
    const args: Record<string, string[]> = {
      'explain-notification': [...ALL, 'evt-A'],
      'unknown-quarantined-older-than': [...ALL, '0'],
      'accepted-not-delivered': [...ALL, '0'],
      'slo-attainment': [
        ...ALL,
        'password-reset',
        '0',
        String(Date.parse(`${DAY2}T23:59:59Z`)),
        '60000',
        '300000',
      ],
      'states-over-time': [...ALL, 'hour'],
    };

    try {
      // Act
      const counts = [];
      for (const q of queries.values())
        counts.push((await nothing.runNamed(q, args[q.name] ?? ALL)).rows.length);

      // Assess
      expect(counts).toEqual([...queries.keys()].map(() => 0));
    } finally {
      nothing.close();
      await rm(empty, { recursive: true, force: true });
    }
  });
});

// The same scenario, but one batch stored twice (a bisected retry under another key) and a second
// tenant using the same event id: every named query must answer exactly as on the clean archive.
describe('named audit queries on an archive with a duplicated batch and a second tenant', () => {
  let clean: string;
  let dirty: string;
  const opened: DuckDbAudit[] = [];
  const ALL = ['default', DAY1, DAY2];
  const ARGS: Record<string, string[]> = {
    'explain-notification': [...ALL, 'evt-A'],
    'unknown-quarantined-older-than': [...ALL, String(Date.parse(`${DAY2}T00:00:00Z`))],
    'accepted-not-delivered': [...ALL, String(Date.parse(`${DAY2}T00:00:00Z`))],
    'slo-attainment': [...ALL, 'receipt', '0', String(Date.parse(`${DAY2}T23:59:59Z`)), '120000', '600000'],
    'states-over-time': [...ALL, 'hour'],
  };

  beforeAll(async () => {
    clean = await mkdtemp(join(tmpdir(), 'sendproof-archive-clean-'));
    dirty = await mkdtemp(join(tmpdir(), 'sendproof-archive-dirty-'));
    await writeScenarioArchive(clean);
    await writeScenarioArchive(dirty, { duplicated: true });
    const other = { tenant: 'other', eventId: 'evt-A', recipientRef: 'u-1', channel: 'email' as const };
    const t0 = Date.parse(`${DAY1}T10:00:00Z`);
    await writeBatch(
      dirty,
      notificationRecords(other, [
        { s: 'claimed', at: t0, by: 'dispatch:w9' },
        { s: 'accepted', at: t0 + 10, by: 'dispatch:w9', msg: 'other-msg', set: { providerMessageId: 'm' } },
      ]),
    );
  });

  afterAll(async () => {
    for (const a of opened) a.close();
    await Promise.all([clean, dirty].map((d) => rm(d, { recursive: true, force: true })));
  });

  it('the dirty archive really holds repeated transitions and another tenant', async () => {
    // Prepare
    const audit = await DuckDbAudit.open(dirty);
    opened.push(audit);

    // Act
    const { rows } = await audit.query(
      'SELECT tenant, count(*) AS n, count(DISTINCT dedupe_key || CAST(version AS VARCHAR)) AS d FROM transitions GROUP BY tenant ORDER BY tenant',
    );

    // Assess: 33 transitions of tenant default, 5 of them stored twice; 2 of tenant other.
    expect(rows).toEqual([
      { tenant: 'default', n: 38, d: 30 }, // F re-created after its TTL repeats versions 1-3 with new times
      { tenant: 'other', n: 2, d: 2 },
    ]);
  });

  it('every named query counts each transition once and sees only its tenant', async () => {
    // Prepare
    const [a, b] = [await DuckDbAudit.open(clean), await DuckDbAudit.open(dirty)];
    opened.push(a, b);

    for (const query of loadNamedQueries()) {
      // Act
      const args = ARGS[query.name] ?? ALL;
      const expected = await a.runNamed(query, args);
      const actual = await b.runNamed(query, args);

      // Assess
      expect(actual.rows, query.name).toEqual(expected.rows);
    }
    const explain = loadNamedQueries().find((q) => q.name === 'explain-notification')!;
    expect((await b.runNamed(explain, ['other', DAY1, DAY2, 'evt-A'])).rows.map((r) => r.actor)).toEqual([
      'dispatch:w9',
      'dispatch:w9',
    ]);
  });
});
