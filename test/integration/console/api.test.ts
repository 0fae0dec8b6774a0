import { beforeAll, describe, expect, it } from 'vitest';
import { dynamoLedgerStats, dynamoSuppressions, memoryAuditLog } from '../../../lib/console/adapters.js';
import { jwtClaimsAuthenticator, newToken, staticTokenAuthenticator } from '../../../lib/console/auth.js';
import { ATTENTION_LISTS, type ConsoleDeps, createConsoleHandler } from '../../../lib/console/ConsoleApi.js';
import { type ConsoleRequest, fromApiGatewayEvent } from '../../../lib/console/http.js';
import { AuditQueryFailed } from '../../../lib/console/ports.js';
import { buildClaimRecord } from '../../../lib/dispatch/claimRecord.js';
import { parseIntent } from '../../../lib/domain/intent.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { ATTENTION_STATES } from '../../../lib/domain/states.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../../lib/ledger/DynamoOperatorQueries.js';
import { DynamoSuppressionList } from '../../../lib/ledger/DynamoSuppressionList.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { cancelNotifications } from '../../../lib/publish/cancelNotifications.js';
import { OperatorDecisions } from '../../../lib/reconcile/OperatorDecisions.js';
import { seedRow } from '../../support/consoleSeed.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { receiptIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// API contract for both roles, without a browser: the real handler on DynamoDB Local (global setup).
const clock = new ManualClock(Date.parse('2026-11-30T12:00:00Z'));
const viewerToken = newToken();
const operatorToken = newToken();
const CAPS = {
  idempotencyKey: true,
  keyRetentionSeconds: 86_400,
  lookupByKey: true,
  lookupByProviderId: true,
  cancel: false,
  pushEvidence: false,
};
let ledger: DynamoLedger;
let queries: DynamoOperatorQueries;
let deps: ConsoleDeps;
let log: ReturnType<typeof memoryAuditLog>;
let quarantined: DeliveryRecord[];
let unknownRow: DeliveryRecord;
let stalledRow: DeliveryRecord;

const handlerWith = (overrides: Partial<ConsoleDeps> = {}) => createConsoleHandler({ ...deps, ...overrides });
const call = (
  token: string | undefined,
  method: string,
  path: string,
  options: { query?: Record<string, string>; body?: unknown; handler?: ReturnType<typeof handlerWith> } = {},
) => {
  const request: ConsoleRequest = {
    method,
    path,
    query: options.query ?? {},
    headers: {
      host: '127.0.0.1:1',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    sourceIp: '127.0.0.1',
  };
  return (options.handler ?? handlerWith())(request).then((r) => ({
    status: r.status,
    headers: r.headers,
    // biome-ignore lint/suspicious/noExplicitAny: the contract test reads the JSON answers loosely
    body: JSON.parse(String(r.body)) as Record<string, any>,
  }));
};

beforeAll(async () => {
  const { raw, doc } = localDynamo();
  const table = await createLedgerTable(raw, 'console');
  const suppressionTable = await createSuppressionTable(raw);
  ledger = new DynamoLedger(doc, table);
  queries = new DynamoOperatorQueries(doc, table);
  await new DynamoSuppressionList(doc, suppressionTable).suppress(
    'acme-games',
    'player-9',
    'email',
    'hard_bounce',
  );
  quarantined = [];
  for (const id of ['q1', 'q2', 'q3', 'q4'])
    quarantined.push(await seedRow(ledger, clock, { eventId: `evt-${id}`, state: 'quarantined' }));
  unknownRow = await seedRow(ledger, clock, { eventId: 'evt-u1', state: 'unknown' });
  await seedRow(ledger, clock, { eventId: 'evt-r1', state: 'retry_wait' });
  stalledRow = await seedRow(ledger, clock, { eventId: 'evt-s1', state: 'stalled' });
  await seedRow(ledger, clock, { eventId: 'evt-a1', state: 'accepted' });
  clock.advance(20 * 60_000);
  log = memoryAuditLog();
  deps = {
    ledger,
    decisions: new OperatorDecisions({ ledger, purposes: new PurposeRegistry(), clock }),
    authenticate: staticTokenAuthenticator([
      { token: viewerToken, principal: { id: 'viewer-1', role: 'viewer' } },
      { token: operatorToken, principal: { id: 'op-1', role: 'operator' } },
    ]),
    clock,
    stats: dynamoLedgerStats(doc, table, () => clock.now()),
    suppressions: dynamoSuppressions(doc, suppressionTable),
    suppressionList: new DynamoSuppressionList(doc, suppressionTable),
    capabilities: (name) => (name === 'rest' ? CAPS : undefined),
    auditLog: log,
  };
});

describe('console API: viewer', () => {
  it('reads the overview: rows by state and the oldest age of each non-terminal state', async () => {
    const res = await call(viewerToken, 'GET', '/api/overview');
    expect(res.status).toBe(200);
    // Every seeded row is the reset fixture's tenant: the overview picks it, and says so.
    expect(res.body.tenant).toBe('acme-games');
    const byState = res.body.panels.byState;
    expect(byState).toMatchObject({ source: 'ledger', window: 'now', total: 8 });
    const of = (state: string) => byState.rows.find((r: { state: string }) => r.state === state);
    expect(of('quarantined')).toEqual({ state: 'quarantined', rows: 4, oldestAgeSeconds: 1200 });
    expect(of('unknown').rows).toBe(1);
    expect(of('retry_wait').rows).toBe(1);
    expect(of('accepted')).toEqual({ state: 'accepted', rows: 1, oldestAgeSeconds: null });
    // The archive figures say that there is no archive here, rather than showing zeros.
    expect(res.body.panels.latency.percentiles).toEqual({
      rows: null,
      error: 'no audit archive is configured',
    });
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('lists quarantined rows with age, reason and the transport capability; filters apply', async () => {
    const res = await call(viewerToken, 'GET', '/api/attention', { query: { list: 'quarantined' } });
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(4);
    expect(res.body.items[0]).toMatchObject({
      state: 'quarantined',
      reason: 'no_lookup_no_replay',
      ageSeconds: 1200,
      transport: 'rest',
      capability: { lookup: true, replay: true, cancel: false },
    });
    const filtered = await call(viewerToken, 'GET', '/api/attention', {
      query: { list: 'quarantined', tenant: 'other-tenant' },
    });
    expect(filtered.body.items).toHaveLength(0);
    const tooYoung = await call(viewerToken, 'GET', '/api/attention', {
      query: { list: 'quarantined', minAgeSeconds: '3600' },
    });
    expect(tooYoung.body.items).toHaveLength(0);
  });

  it('lists stalled rows: the rows the sweep put in state stalled, with its reason; an old unknown or retry_wait row is not stalled', async () => {
    const res = await call(viewerToken, 'GET', '/api/attention', { query: { list: 'stalled' } });
    expect(res.status).toBe(200);
    // The unknown and retry_wait rows are 20 minutes old: they have owners (reconciler, parked message).
    expect(res.body.items).toEqual([
      expect.objectContaining({
        dedupeKey: stalledRow.pk,
        state: 'stalled',
        reason: 'nothing_sealed',
        ageSeconds: 1200,
      }),
    ]);
    expect(res.body.stalledAfterSeconds).toBeUndefined();
    // Every attention index has its list, and nothing else is one.
    expect([...ATTENTION_LISTS].sort()).toEqual([...ATTENTION_STATES].sort());
  });

  it("shows a notification's timeline: ledger history, provider ids, evidence", async () => {
    const res = await call(viewerToken, 'GET', '/api/timeline', { query: { key: unknownRow.pk } });
    expect(res.status).toBe(200);
    expect(res.body.history.map((h: { state: string }) => h.state)).toEqual([
      'claimed',
      'dispatching',
      'unknown',
    ]);
    expect(res.body.evidence).toEqual({ eventIds: [], entries: [] });
    expect(res.body.archive).toBeNull(); // no archive configured in this test
    expect(res.body.links.exportBundle).toBeNull(); // nor an export bundle source
    const missing = await call(viewerToken, 'GET', '/api/timeline', { query: { key: 'a:b:c:d:e' } });
    expect(missing.status).toBe(404);
  });

  it("links the timeline to the notification's export bundle and serves it as a download for the row's tenant and days", async () => {
    // Prepare: the port's test double records what the console asked for
    const asked: Array<[string, { tenant: string; from: string; to: string }]> = [];
    const handler = handlerWith({
      exportBundle: async (subject, scope) => {
        asked.push([subject, scope]);
        return {
          sendproofBundle: 1,
          manifest: { subject, transitions: 3 } as never,
          files: [{ path: 'timeline.json', base64: Buffer.from('[]').toString('base64') }],
        };
      },
    });
    // Act
    const timeline = await call(viewerToken, 'GET', '/api/timeline', {
      query: { key: unknownRow.pk },
      handler,
    });
    const link = new URL(timeline.body.links.exportBundle, 'http://console.local');
    const download = await call(viewerToken, 'GET', link.pathname, {
      query: Object.fromEntries(link.searchParams),
      handler,
    });
    const missing = await call(viewerToken, 'GET', '/api/export', { query: { key: 'a:b:c:d:e' }, handler });
    const unconfigured = await call(viewerToken, 'GET', '/api/export', { query: { key: unknownRow.pk } });
    // Assess
    expect(link.pathname).toBe('/api/export');
    expect(download.status).toBe(200);
    expect(download.headers['content-disposition']).toMatch(
      /^attachment; filename="sendproof-bundle-[0-9a-f]{16}\.json"$/,
    );
    expect(download.body).toMatchObject({ sendproofBundle: 1, manifest: { subject: unknownRow.pk } });
    expect(asked).toEqual([
      [unknownRow.pk, { tenant: unknownRow.tenant, from: '2026-11-30', to: '2026-11-30' }],
    ]);
    expect(missing.status).toBe(404);
    expect(unconfigured.status).toBe(501);
  });

  it("answers 502 with the engine's reason when a named query fails (an Athena FAILED state), not 500", async () => {
    // Prepare: the AuditQueries port's test double fails as the Athena runner does
    const handler = handlerWith({
      audit: {
        list: () => [{ name: 'manual-resolutions', description: 'd', parameters: [], sql: 'SELECT 1' }],
        run: async () => {
          throw new AuditQueryFailed('manual-resolutions: failed: TABLE_NOT_FOUND: transitions');
        },
      },
    });
    // Act
    const res = await call(viewerToken, 'POST', '/api/queries/run', {
      body: { name: 'manual-resolutions', args: [] },
      handler,
    });
    // Assess
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({
      error: 'query_failed',
      message: expect.stringContaining('TABLE_NOT_FOUND'),
    });
  });

  it('reads the suppression list by opaque ref', async () => {
    const res = await call(viewerToken, 'GET', '/api/suppressions');
    expect(res.body.items).toEqual([
      expect.objectContaining({
        tenant: 'acme-games',
        recipientRef: 'player-9',
        channels: { email: 'hard_bounce' },
      }),
    ]);
  });

  it('gets 403 on every decision outcome, and each denial is audited', async () => {
    const before = log.entries.length;
    for (const outcome of ['accepted', 'rejected', 'resend']) {
      const res = await call(viewerToken, 'POST', '/api/decisions', {
        body: { keys: [quarantined[0]!.pk], outcome, reason: 'viewer tries' },
      });
      expect(res.status).toBe(403);
    }
    const denials = log.entries.slice(before);
    expect(denials).toHaveLength(3);
    expect(
      denials.every((e) => e.kind === 'denied' && e.principal === 'viewer:viewer-1' && e.status === 403),
    ).toBe(true);
    expect((await ledger.get(quarantined[0]!.pk))!.state).toBe('quarantined');
  });

  it('refuses a call without a valid token (401) and audits it', async () => {
    const before = log.entries.length;
    expect((await call(undefined, 'GET', '/api/overview')).status).toBe(401);
    expect((await call('x'.repeat(43), 'GET', '/api/overview')).status).toBe(401);
    expect(log.entries.slice(before).map((e) => [e.principal, e.reason])).toEqual([
      ['anonymous', 'missing_bearer_token'],
      ['anonymous', 'unknown_token'],
    ]);
  });

  it('answers a malformed request with a structured 400', async () => {
    const res = await call(viewerToken, 'GET', '/api/attention', { query: { list: 'everything' } });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.issues[0].field).toBe('list');
  });
});

describe('console API: operator', () => {
  it('resolves three rows with one decision and one reason, recorded under the authenticated principal', async () => {
    const keys = quarantined.slice(0, 3).map((r) => r.pk);
    const res = await call(operatorToken, 'POST', '/api/decisions', {
      body: { keys, outcome: 'accepted', reason: 'provider console shows delivered, ticket OPS-12' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ decidedBy: 'operator:op-1', recorded: 3, refused: 0 });
    for (const key of keys) {
      const row = (await ledger.get(key))!;
      expect(row.state).toBe('resolved_accepted');
      expect(row.history.at(-1)!.by).toBe('operator:op-1');
      expect(row.history.at(-1)!.why).toContain('ticket OPS-12');
    }
    expect(log.entries.filter((e) => e.kind === 'decision' && keys.includes(e.dedupeKey!))).toHaveLength(3);
  });

  it('never takes the identity from the body', async () => {
    const res = await call(operatorToken, 'POST', '/api/decisions', {
      body: {
        keys: [quarantined[3]!.pk],
        outcome: 'rejected',
        reason: 'spoof attempt',
        operator: 'someone-else',
      },
    });
    expect(res.status).toBe(400);
    expect((await ledger.get(quarantined[3]!.pk))!.state).toBe('quarantined');
  });

  it('reports a refused row per key (already decided) instead of failing the batch', async () => {
    const res = await call(operatorToken, 'POST', '/api/decisions', {
      body: {
        keys: [quarantined[0]!.pk, quarantined[3]!.pk],
        outcome: 'rejected',
        reason: 'second look, OPS-13',
      },
    });
    expect(res.body.recorded).toBe(1);
    expect(res.body.results[0]).toMatchObject({ ok: false, error: 'not_decidable' });
    expect((await ledger.get(quarantined[3]!.pk))!.state).toBe('resolved_rejected');
  });

  it('rate-limits decisions per principal and audits the refusal', async () => {
    const limited = handlerWith({ decisionRowsPerMinute: 2 });
    const res = await call(operatorToken, 'POST', '/api/decisions', {
      handler: limited,
      body: {
        keys: [unknownRow.pk, 'x:y:z:w:v', 'x:y:z:w:u'],
        outcome: 'accepted',
        reason: 'too many at once',
      },
    });
    expect(res.status).toBe(429);
    expect(log.entries.at(-1)).toMatchObject({ kind: 'denied', status: 429, reason: 'rate_limited' });
    expect((await ledger.get(unknownRow.pk))!.state).toBe('unknown');
  });

  it('adds a suppression by opaque ref under the principal; a viewer may not; addresses are refused', async () => {
    const body = {
      tenant: 'acme-games',
      recipientRef: 'player-12',
      channel: 'sms',
      reason: 'asked to stop, OPS-14',
    };
    expect((await call(viewerToken, 'POST', '/api/suppressions', { body })).status).toBe(403);
    const added = await call(operatorToken, 'POST', '/api/suppressions', { body });
    expect(added.status).toBe(200);
    const listed = await call(viewerToken, 'GET', '/api/suppressions');
    expect(listed.body.items).toContainEqual(
      expect.objectContaining({
        recipientRef: 'player-12',
        channels: { sms: 'operator:op-1:asked to stop, OPS-14' },
      }),
    );
    expect(log.entries.at(-1)).toMatchObject({
      kind: 'decision',
      outcome: 'suppress',
      principal: 'operator:op-1',
    });
    for (const bad of [
      { ...body, recipientRef: '+15555550123' },
      { ...body, recipientRef: 'alice@example.com' },
      { ...body, reason: 'mail alice@example.com' },
    ])
      expect((await call(operatorToken, 'POST', '/api/suppressions', { body: bad })).status).toBe(400);
  });

  it('cancels a scheduled receipt by business identity under the principal; a viewer may not; the body cannot name the operator', async () => {
    // Prepare: a receipt the ledger holds until its sendAt, on both channels
    const parsed = parseIntent(
      receiptIntent({
        eventId: 'pay_c1',
        recipient: { ref: 'player-5', email: 'p5@example.com', phone: '+15555550105' },
        channels: ['email', 'sms'],
        sendAt: new Date(clock.now() + 600_000).toISOString(),
      }),
      { purposes: new PurposeRegistry(), clock },
    );
    if (!parsed.ok) throw parsed.error;
    for (const channel of ['email', 'sms'] as const)
      await ledger.claim(
        buildClaimRecord({
          valid: parsed.value,
          channel,
          contentHash: `h:${channel}`,
          templateOwner: 'application',
          workerId: 'dispatch:seed',
          now: clock.now(),
          leaseMs: 60_000,
          initial: { state: 'scheduled', why: 'scheduled_for:later', dueAt: clock.now() + 600_000 },
        }),
      );
    const handler = handlerWith({
      cancel: (request) =>
        cancelNotifications({ ledger, queries, purposes: new PurposeRegistry(), clock }, request),
    });
    const body = { tenant: 'acme-games', eventId: 'pay_c1', reason: 'payment refunded, RF-2' };
    // Act
    const denied = await call(viewerToken, 'POST', '/api/cancel', { body, handler });
    const named = await call(operatorToken, 'POST', '/api/cancel', {
      body: { ...body, operator: 'mallory' },
      handler,
    });
    const leaky = await call(operatorToken, 'POST', '/api/cancel', {
      body: { ...body, reason: 'refund for p5@example.com' },
      handler,
    });
    const done = await call(operatorToken, 'POST', '/api/cancel', { body, handler });
    // Assess
    expect([denied.status, named.status, leaky.status]).toEqual([403, 400, 400]);
    expect(done.status).toBe(200);
    expect(done.body.cancelledBy).toBe('operator:op-1');
    expect(done.body.committed).toBe(true);
    expect(
      done.body.rows
        .map((r: { channel: string; outcome: { result: string } }) => [r.channel, r.outcome.result])
        .sort(),
    ).toEqual([
      ['email', 'cancelled'],
      ['sms', 'cancelled'],
    ]);
    for (const row of done.body.rows) {
      const stored = await ledger.get(row.dedupeKey, true);
      expect(stored?.state).toBe('cancelled');
      expect(stored?.history.at(-1)?.by).toBe('operator:op-1');
      expect(stored?.history.at(-1)?.why).toContain('payment refunded, RF-2');
    }
    expect(log.entries.at(-1)).toMatchObject({
      kind: 'decision',
      outcome: 'cancel',
      principal: 'operator:op-1',
      status: 200,
    });
    expect(JSON.stringify(done.body)).not.toContain('p5@example.com');
  });

  it('runs behind API Gateway: roles from the verified JWT groups, the subject as the decider', async () => {
    const lambda = handlerWith({ authenticate: jwtClaimsAuthenticator() });
    const event = (groups: string, method = 'GET', path = '/api/me') =>
      fromApiGatewayEvent({
        version: '2.0',
        routeKey: '$default',
        rawPath: path,
        rawQueryString: '',
        headers: { Host: 'api.example' },
        isBase64Encoded: false,
        requestContext: {
          http: { method, path, protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent: 'test' },
          authorizer: {
            jwt: {
              claims: { sub: 'a1b2c3d4-0000-4000-8000-000000000001', 'cognito:groups': groups },
              scopes: null,
            },
          },
        },
      } as never);
    const me = await lambda(event('[operator]'));
    expect(JSON.parse(String(me.body))).toEqual({
      id: 'a1b2c3d4-0000-4000-8000-000000000001',
      role: 'operator',
    });
    const viewer = await lambda(event('[viewer]', 'POST', '/api/decisions'));
    expect(viewer.status).toBe(403);
    const nobody = await lambda(event('[]'));
    expect(nobody.status).toBe(403);
  });
});
