import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../../lib/config.js';
import { dynamoLedgerStats, memoryAuditLog } from '../../../lib/console/adapters.js';
import { newToken, staticTokenAuthenticator } from '../../../lib/console/auth.js';
import { type ConsoleDeps, createConsoleHandler } from '../../../lib/console/ConsoleApi.js';
import { providerCircuitsReadModel } from '../../../lib/console/circuitsPanel.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { OperatorDecisions } from '../../../lib/reconcile/OperatorDecisions.js';
import { failoverChainsOf, ProviderHealth } from '../../../lib/transports/health.js';
import type { SendResult } from '../../../lib/transports/port.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';
import { ManualClock } from '../../support/manualClock.js';

// The circuits panel's API on DynamoDB Local (global setup): the circuits are put in their states by the
// dispatchers' own ProviderHealth (lib/transports/health.ts), then read by the console's read model.
const clock = new ManualClock(Date.parse('2026-12-02T12:00:00Z'));
const viewerToken = newToken();
const SETTINGS = { failures: 3, windowSeconds: 60, openSeconds: 120, cacheMs: 0 };
/** A 5xx after the request was sent (lib/transports/classify.ts names it so). */
const FIVE_XX: SendResult = { kind: 'ambiguous', reason: 'provider_error_after_send:503' };
let deps: ConsoleDeps;
let sent: string[] = [];

const get = async (path: string) => {
  const r = await createConsoleHandler(deps)({
    method: 'GET',
    path,
    query: {},
    headers: { host: '127.0.0.1:1', authorization: `Bearer ${viewerToken}` },
    sourceIp: '127.0.0.1',
  });
  // biome-ignore lint/suspicious/noExplicitAny: the contract test reads the JSON answers loosely
  return { status: r.status, body: JSON.parse(String(r.body)) as Record<string, any> };
};

beforeAll(async () => {
  const { raw, doc } = localDynamo();
  const table = await createLedgerTable(raw, 'circuits');
  const health = (workerId: string) =>
    new ProviderHealth(doc, table, { settings: SETTINGS, workerId, now: () => clock.now() });
  // sendgrid: opened at 11:55, its open time ran out, a dispatcher took the probe (half-open) at 11:58.
  clock.set(Date.parse('2026-12-02T11:55:00Z'));
  for (let i = 0; i < 3; i += 1) await health('dispatch:w1').observe('sendgrid', FIVE_XX, false);
  clock.set(Date.parse('2026-12-02T11:58:00Z'));
  expect(await health('dispatch:w2').admit('sendgrid')).toEqual({ kind: 'probe' });
  // ses: three 5xx in a minute at 11:59:30 opened it (until 12:01:30).
  clock.set(Date.parse('2026-12-02T11:59:30Z'));
  for (let i = 0; i < 3; i += 1) await health('dispatch:w3').observe('ses', FIVE_XX, false);
  // twilio: one 5xx this window, still closed. rest (the simulator): never failed, no item at all.
  clock.set(Date.parse('2026-12-02T12:00:00Z'));
  await health('dispatch:w4').observe('twilio', FIVE_XX, false);

  const config = configSchema().parse({
    ledgerTable: table,
    emailProviders: 'ses,sendgrid,simulator',
    smsProviders: 'twilio,simulator',
  });
  // Every call the read model sends, by command name: the panel must read by key, never Scan.
  const counted = {
    send: (command: { constructor: { name: string } }) => {
      sent.push(command.constructor.name);
      return doc.send(command as never);
    },
  } as unknown as DynamoDBDocumentClient;
  deps = {
    ledger: new DynamoLedger(doc, table),
    decisions: new OperatorDecisions({
      ledger: new DynamoLedger(doc, table),
      purposes: new PurposeRegistry(),
      clock,
    }),
    authenticate: staticTokenAuthenticator([
      { token: viewerToken, principal: { id: 'viewer-1', role: 'viewer' } },
    ]),
    clock,
    stats: dynamoLedgerStats(doc, table, () => clock.now()),
    capabilities: () => undefined,
    auditLog: memoryAuditLog(),
    circuits: providerCircuitsReadModel(
      counted,
      table,
      failoverChainsOf(config),
      config.providerCircuit.windowSeconds,
    ),
  };
});

describe('console API: provider circuits', () => {
  it('lists every failover provider in order with a closed, an open and a half-open circuit, in one BatchGetItem', async () => {
    // Act
    sent = [];
    const res = await get('/api/circuits');
    // Assess
    expect(res.status).toBe(200);
    expect(sent).toEqual(['BatchGetCommand']);
    expect(res.body).toMatchObject({
      source: 'ledger: provider health items',
      window: 'now',
      asOf: '2026-12-02T12:00:00.000Z',
      error: null,
    });
    const [email, sms] = res.body.channels;
    expect(email.channel).toBe('email');
    expect(email.providers).toEqual(['ses', 'sendgrid', 'rest']);
    expect(sms.providers).toEqual(['twilio', 'rest']);
    const [ses, sendgrid, rest] = email.circuits;
    expect(ses).toMatchObject({
      provider: 'ses',
      position: 1,
      state: 'open',
      openUntil: '2026-12-02T12:01:30.000Z',
      probeDue: false,
      reason: {
        raw: 'failures:3/60s',
        text: '3 provider failures in 60 s (5xx answers or requests that never left)',
        known: true,
      },
      changedAt: '2026-12-02T11:59:30.000Z',
      changedAgeSeconds: 30,
    });
    expect(ses.history).toEqual([
      {
        state: 'open',
        at: '2026-12-02T11:59:30.000Z',
        by: 'dispatch:w3',
        why: ses.reason,
      },
    ]);
    expect(sendgrid).toMatchObject({
      provider: 'sendgrid',
      position: 2,
      state: 'half_open',
      probeUntil: '2026-12-02T11:58:30.000Z',
      // The probe's 30 s lease ran out at 11:58:30 with no answer recorded: the next send probes again.
      probeDue: true,
      reason: { raw: 'failures:3/60s', known: true },
      changedAt: '2026-12-02T11:58:00.000Z',
    });
    expect(sendgrid.history.map((h: { state: string; by: string }) => [h.state, h.by])).toEqual([
      ['half_open', 'dispatch:w2'],
      ['open', 'dispatch:w1'],
    ]);
    expect(sendgrid.history[0].why).toEqual({
      raw: 'probe_taken',
      text: 'a dispatcher took the probe',
      known: true,
    });
    // Never failed: closed, no reason, nothing changed, listed all the same.
    expect(rest).toEqual({
      provider: 'rest',
      position: 3,
      state: 'closed',
      failures: 0,
      windowSeconds: 60,
      probeDue: false,
      history: [],
    });
    expect(sms.circuits[0]).toMatchObject({ provider: 'twilio', state: 'closed', failures: 1 });
    expect(sms.circuits[0].reason).toBeUndefined();
    expect(sms.circuits[1]).toEqual({ ...rest, position: 2 });
  });

  it('the overview carries the same panel; a console without circuits says so (501) and shows none', async () => {
    sent = [];
    const overview = await get('/api/overview');
    expect(overview.status).toBe(200);
    expect(sent).toEqual(['BatchGetCommand']);
    expect(overview.body.panels.circuits.channels.map((c: { channel: string }) => c.channel)).toEqual([
      'email',
      'sms',
    ]);
    const { circuits: _none, ...without } = deps;
    const saved = deps;
    deps = without;
    try {
      expect((await get('/api/circuits')).status).toBe(501);
      expect((await get('/api/overview')).body.panels.circuits).toBeUndefined();
    } finally {
      deps = saved;
    }
  });

  it('no failover channel: no read at all, and an empty list', async () => {
    const single = configSchema().parse({ emailTransport: 'ses', smsTransport: 'simulator' });
    expect(failoverChainsOf(single)).toEqual([]);
    sent = [];
    const model = providerCircuitsReadModel(
      { send: async () => sent.push('any') } as unknown as DynamoDBDocumentClient,
      'unused',
      failoverChainsOf(single),
      60,
    );
    expect(await model.circuits(clock.now())).toEqual([]);
    expect(sent).toEqual([]);
  });
});
