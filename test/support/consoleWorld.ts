import { memoryAuditLog, rowsLedgerStats, rowsNotificationSearch } from '../../lib/console/adapters.js';
import { newToken, staticTokenAuthenticator } from '../../lib/console/auth.js';
import { type ConsoleDeps, createConsoleHandler } from '../../lib/console/ConsoleApi.js';
import type { ConsoleRequest } from '../../lib/console/http.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { MemoryLedger } from '../../lib/ledger/MemoryLedger.js';
import { OperatorDecisions } from '../../lib/reconcile/OperatorDecisions.js';
import { seedRow } from './consoleSeed.js';
import { ManualClock } from './manualClock.js';

/**
 * The console's route modules on the in-memory ledger (unit tests: no server): 12 quarantined rows of
 * acme-games one minute apart (event ids q00..q11), 2 of clinic, 1 accepted; a viewer and an operator.
 */
export const viewer = newToken();
export const operator = newToken();

export const world = async () => {
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

export const call = async (
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
