import type { Command } from 'commander';
import { requireSettings } from '../../lib/config.js';
import { NON_TERMINAL_STATES } from '../../lib/domain/states.js';
import type { OperatorQueries } from '../../lib/ledger/operatorQueries.js';
import { activeHolds, transportNamesOf } from '../../lib/rate/TransportHolds.js';
import { HEALTH_PREFIX } from '../../lib/transports/health.js';
import { documentClientFor } from '../../lib/wiring.js';
import { ledgerFor, output, type TargetOptions, withTargetOptions } from '../localState.js';

export interface LedgerStats {
  rows: number;
  byState: Record<string, number>;
  /** Oldest age, in seconds, of the rows in each non-terminal state (since the row was created). */
  oldestWaitingSeconds: Record<string, number>;
  /** Notifications whose intent the ledger holds sealed (parked work the sweep owns). */
  sealed: number;
  /** Provider circuits (failover, lib/transports/health.ts): one per provider that has counted a failure. */
  circuits: Array<{ provider: string; state: string; failures: number; openUntil?: number; reason?: string }>;
}

/**
 * Counts rows by state with a paginated, projected scan (an operator command, never on a hot path;
 * progress goes to stderr). Attention ages come from `attnAt`, the time a row entered its state.
 */
export const ledgerStats = async (
  queries: Pick<OperatorQueries, 'summaries'>,
  now: number,
  onPage?: (rows: number) => void,
): Promise<LedgerStats> => {
  const stats: LedgerStats = { rows: 0, byState: {}, oldestWaitingSeconds: {}, sealed: 0, circuits: [] };
  let cursor: string | undefined;
  do {
    const page = await queries.summaries(cursor);
    for (const row of page.items) {
      if (row.kind === 'seal') stats.sealed += 1;
      if (row.kind === 'provider_health' && row.pk && row.state) {
        stats.circuits.push({
          provider: row.pk.slice(HEALTH_PREFIX.length),
          state: row.state,
          failures: row.failures ?? 0,
          ...(row.openUntil !== undefined ? { openUntil: row.openUntil } : {}),
          ...(row.reason !== undefined ? { reason: row.reason } : {}),
        });
        continue;
      }
      if (!row.state || row.state === 'closed' || row.state === 'open' || row.state === 'half_open') continue; // pointers, seals, breakers
      stats.rows += 1;
      stats.byState[row.state] = (stats.byState[row.state] ?? 0) + 1;
      const since = row.createdAt ?? row.attnAt;
      if (since !== undefined && NON_TERMINAL_STATES.includes(row.state)) {
        const age = Math.max(0, Math.round((now - since) / 1000));
        stats.oldestWaitingSeconds[row.state] = Math.max(stats.oldestWaitingSeconds[row.state] ?? 0, age);
      }
    }
    onPage?.(stats.rows);
    cursor = page.cursor;
  } while (cursor);
  return stats;
};

export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('stats')
      .description(
        'ledger rows by state, the age of the oldest row in each non-terminal state, sealed notifications and transport holds',
      )
      .option('--json', 'machine-readable output'),
  ).action(async (options: TargetOptions & { json?: boolean }) => {
    const { queries, config } = ledgerFor(options);
    const scanned = await ledgerStats(queries, Date.now(), (rows) =>
      process.stderr.write(`scanned ${rows} rows\r`),
    );
    // Transport-wide holds (issue 25): their rows wait in retry_wait (transport_hold:<reason>).
    const holds = await activeHolds(
      documentClientFor(config),
      requireSettings(config, ['ledgerTable']).ledgerTable,
      transportNamesOf(config),
    );
    const stats = { ...scanned, holds };
    output(options.json, stats, () =>
      [
        `${stats.rows} rows`,
        ...Object.entries(stats.byState)
          .sort()
          .map(([state, count]) => `  ${state.padEnd(18)} ${count}`),
        ...Object.entries(stats.oldestWaitingSeconds).map(([state, age]) => `oldest ${state}: ${age} s`),
        `sealed (parked, owned by the sweep): ${stats.sealed}`,
        holds.length === 0
          ? 'transport holds: none'
          : `transport holds (rows wait in retry_wait, owned by the sweep):\n${holds
              .map(
                (h) =>
                  `  ${h.transport.padEnd(10)} ${h.reason}  since ${new Date(h.since).toISOString()}  ${
                    h.until !== undefined
                      ? `until ${new Date(h.until).toISOString()}`
                      : `next probe ${new Date(h.probeAt).toISOString()}`
                  }`,
              )
              .join('\n')}`,
        ...stats.circuits.map(
          (c) =>
            `circuit ${c.provider}: ${c.state}${c.state === 'closed' ? ` (${c.failures} failures this window)` : ''}${c.openUntil !== undefined ? ` until ${new Date(c.openUntil).toISOString()}` : ''}${c.reason ? ` (opened: ${c.reason})` : ''}`,
        ),
      ].join('\n'),
    );
  });
};
