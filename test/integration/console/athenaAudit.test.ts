import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadNamedQueries, NamedQueryError } from '../../../lib/archive/namedQueries.js';
import { athenaClient } from '../../../lib/aws/athenaClient.js';
import { memoryAuditLog, rowsLedgerStats } from '../../../lib/console/adapters.js';
import { AthenaQueryError, athenaAuditQueries } from '../../../lib/console/athenaAuditQueries.js';
import { newToken, staticTokenAuthenticator } from '../../../lib/console/auth.js';
import { createConsoleHandler } from '../../../lib/console/ConsoleApi.js';
import { AuditQueryFailed } from '../../../lib/console/ports.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { MemoryLedger } from '../../../lib/ledger/MemoryLedger.js';
import { OperatorDecisions } from '../../../lib/reconcile/OperatorDecisions.js';
import { ManualClock } from '../../support/manualClock.js';

// An HTTP-level fake of Athena's JSON 1.1 API on loopback (no Athena emulator exists), driven by the real
// @aws-sdk/client-athena: what is asserted is what the SDK really put on the wire.
type Call = { target: string; body: Record<string, unknown> };
let server: Server;
let endpoint: string;
const calls: Call[] = [];
/** What the fake answers next: states GetQueryExecution walks through, and the result pages. */
let script: {
  states: Array<{ State: string; StateChangeReason?: string }>;
  pages: Array<{ rows: string[][]; next?: string }>;
  columns: Array<{ Name: string; Type: string }>;
};

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '').replace('AmazonAthena.', '');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      calls.push({ target, body });
      const reply = (status: number, value: unknown) =>
        response
          .writeHead(status, { 'content-type': 'application/x-amz-json-1.1' })
          .end(JSON.stringify(value));
      if (target === 'StartQueryExecution') return reply(200, { QueryExecutionId: 'qe-1' });
      if (target === 'StopQueryExecution') return reply(200, {});
      if (target === 'GetQueryExecution') {
        const status = script.states.length > 1 ? script.states.shift()! : script.states[0]!;
        return reply(200, { QueryExecution: { QueryExecutionId: 'qe-1', Status: status } });
      }
      if (target === 'GetQueryResults') {
        const index = body.NextToken ? Number(String(body.NextToken).replace('page-', '')) : 0;
        const page = script.pages[index]!;
        return reply(200, {
          ResultSet: {
            Rows: page.rows.map((cells) => ({
              Data: cells.map((c) => (c === '<null>' ? {} : { VarCharValue: c })),
            })),
            ResultSetMetadata: { ColumnInfo: script.columns.map((c) => ({ ...c, Label: c.Name })) },
          },
          ...(page.next ? { NextToken: page.next } : {}),
        });
      }
      return reply(400, { __type: 'InvalidRequestException', Message: `unexpected ${target}` });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

beforeEach(() => {
  calls.length = 0;
});

const runner = (extra: Partial<Parameters<typeof athenaAuditQueries>[0]> = {}) =>
  athenaAuditQueries({
    client: athenaClient({ region: 'eu-west-1', endpoint }),
    workGroup: 'sendproof-audit',
    database: 'sendproof_archive',
    sleep: async () => undefined,
    ...extra,
  });

describe('Athena runner for the named audit queries (HTTP-level fake of the Athena API)', () => {
  it('runs the file text in the workgroup with the arguments as execution parameters, polls, and reads every page', async () => {
    // Prepare
    script = {
      states: [{ State: 'QUEUED' }, { State: 'RUNNING' }, { State: 'SUCCEEDED' }],
      columns: [
        { Name: 'dedupe_key', Type: 'varchar' },
        { Name: 'version', Type: 'integer' },
        { Name: 'transition_at_ms', Type: 'bigint' },
        { Name: 'why', Type: 'varchar' },
      ],
      pages: [
        {
          rows: [
            ['dedupe_key', 'version', 'transition_at_ms', 'why'],
            ['acme:receipt:1:p:email', '1', '1764583751350', '<null>'],
          ],
          next: 'page-1',
        },
        { rows: [['acme:receipt:1:p:email', '2', '1764583752754', 'ses:Delivery']] },
      ],
    };
    const explain = loadNamedQueries().find((q) => q.name === 'explain-notification')!;
    // An argument that would break out of a spliced string literal.
    const hostile = "x' OR '1'='1";

    // Act
    const result = await runner().run('explain-notification', ['acme', '2026-12-01', '2026-12-02', hostile]);

    // Assess
    expect(calls.map((c) => c.target)).toEqual([
      'StartQueryExecution',
      'GetQueryExecution',
      'GetQueryExecution',
      'GetQueryExecution',
      'GetQueryResults',
      'GetQueryResults',
    ]);
    // The SDK adds an idempotency token itself: a retried StartQueryExecution starts one query, not two.
    expect(calls[0]!.body).toEqual({
      ClientRequestToken: expect.any(String),
      QueryString: explain.sql,
      WorkGroup: 'sendproof-audit',
      QueryExecutionContext: { Database: 'sendproof_archive' },
      ExecutionParameters: ["'acme'", "'2026-12-01'", "'2026-12-02'", "'x'' OR ''1''=''1'"],
    });
    expect(calls[0]!.body.QueryString).not.toContain(hostile);
    expect(calls[5]!.body).toMatchObject({ QueryExecutionId: 'qe-1', NextToken: 'page-1' });
    expect(result).toEqual({
      columns: ['dedupe_key', 'version', 'transition_at_ms', 'why'],
      rows: [
        { dedupe_key: 'acme:receipt:1:p:email', version: 1, transition_at_ms: '1764583751350', why: null },
        {
          dedupe_key: 'acme:receipt:1:p:email',
          version: 2,
          transition_at_ms: '1764583752754',
          why: 'ses:Delivery',
        },
      ],
    });
  });

  it('checks a bigint argument before calling Athena, and binds it unquoted', async () => {
    // Prepare
    script = {
      states: [{ State: 'SUCCEEDED' }],
      columns: [{ Name: 'n', Type: 'bigint' }],
      pages: [{ rows: [['n']] }],
    };
    // Act
    const refused = await runner()
      .run('accepted-not-delivered', ['acme', '2026-12-01', '2026-12-02', '1 OR 1=1'])
      .catch((e: unknown) => e);
    const callsAfterRefusal = calls.length;
    const result = await runner().run('accepted-not-delivered', [
      'acme',
      '2026-12-01',
      '2026-12-02',
      '1764583751350',
    ]);
    // Assess
    expect(refused).toBeInstanceOf(NamedQueryError);
    expect(callsAfterRefusal).toBe(0);
    expect(calls[0]!.body.ExecutionParameters).toEqual([
      "'acme'",
      "'2026-12-01'",
      "'2026-12-02'",
      '1764583751350',
    ]);
    expect(result).toEqual({ columns: ['n'], rows: [] });
  });

  it("reports a failed query with Athena's reason, as the failure the console answers 502 for", async () => {
    // Prepare
    script = {
      states: [{ State: 'RUNNING' }, { State: 'FAILED', StateChangeReason: 'TABLE_NOT_FOUND: transitions' }],
      columns: [],
      pages: [],
    };
    // Act
    const error = await runner()
      .run('manual-resolutions', ['acme', '2026-12-01', '2026-12-02'])
      .catch((e: unknown) => e);
    // Assess
    expect(error).toBeInstanceOf(AthenaQueryError);
    expect(error).toBeInstanceOf(AuditQueryFailed);
    expect((error as AthenaQueryError).state).toBe('FAILED');
    expect((error as Error).message).toContain('TABLE_NOT_FOUND: transitions');
    expect(calls.map((c) => c.target)).not.toContain('GetQueryResults');
  });

  it('stops a query that outlives the timeout instead of leaving it running', async () => {
    // Prepare: a clock that moves 1 s per poll
    script = { states: [{ State: 'RUNNING' }], columns: [], pages: [] };
    let clock = 0;
    const slow = runner({
      timeoutMs: 3_000,
      now: () => clock,
      sleep: async (ms) => {
        clock += ms;
      },
    });
    // Act
    const error = await slow
      .run('manual-resolutions', ['acme', '2026-12-01', '2026-12-02'])
      .catch((e: unknown) => e);
    // Assess
    expect(error).toBeInstanceOf(AthenaQueryError);
    expect((error as AthenaQueryError).state).toBe('RUNNING');
    expect(calls.at(-1)).toEqual({ target: 'StopQueryExecution', body: { QueryExecutionId: 'qe-1' } });
  });
});

describe("the overview's panels on Athena", () => {
  it('runs every chart query as its file says, with typed parameters, and draws the panel from the answer', async () => {
    // Prepare: one answer for every query (the states-over-time shape); a ledger for the "now" figures
    script = {
      states: [{ State: 'SUCCEEDED' }],
      columns: [
        { Name: 'bucket', Type: 'varchar' },
        { Name: 'state', Type: 'varchar' },
        { Name: 'transitions', Type: 'bigint' },
      ],
      pages: [
        {
          rows: [
            ['bucket', 'state', 'transitions'],
            ['2026-12-01T09:00Z', 'accepted', '4'],
          ],
        },
      ],
    };
    const clock = new ManualClock(Date.parse('2026-12-01T12:00:00Z'));
    const ledger = new MemoryLedger();
    const token = newToken();
    const handler = createConsoleHandler({
      ledger,
      decisions: new OperatorDecisions({ ledger, purposes: new PurposeRegistry(), clock }),
      authenticate: staticTokenAuthenticator([{ token, principal: { id: 'v', role: 'viewer' } }]),
      clock,
      stats: rowsLedgerStats(
        () => ledger.rows(),
        () => clock.now(),
      ),
      capabilities: () => undefined,
      auditLog: memoryAuditLog(),
      audit: runner(),
    });

    // Act
    const response = await handler({
      method: 'GET',
      path: '/api/overview',
      query: { tenant: 'mix-co', bucket: 'hour' },
      headers: { host: '127.0.0.1:1', authorization: `Bearer ${token}` },
      sourceIp: '127.0.0.1',
    });
    const o = JSON.parse(String(response.body));

    // Assess
    const started = calls.filter((c) => c.target === 'StartQueryExecution').map((c) => c.body);
    const byName = new Map(loadNamedQueries().map((q) => [q.sql, q.name]));
    const range = ["'mix-co'", "'2026-11-25'", "'2026-12-01'"];
    expect(
      Object.fromEntries(started.map((b) => [byName.get(String(b.QueryString)), b.ExecutionParameters])),
    ).toEqual({
      'intent-to-accepted-latency': range,
      'latency-distribution': range,
      'states-over-time': [...range, "'hour'"],
      'delivery-facts-daily': range,
      'manual-resolutions': range,
      'multiple-acceptances': range,
    });
    expect(started.every((b) => b.WorkGroup === 'sendproof-audit')).toBe(true);
    expect(o.panels.statesOverTime).toMatchObject({
      source: 'archive (Athena (workgroup sendproof-audit))',
      // Athena answers text; the page reads every count through num() (chartData.js), as DuckDB's BIGINTs
      rows: [{ bucket: '2026-12-01T09:00Z', state: 'accepted', transitions: '4' }],
      error: null,
    });
  });
});
