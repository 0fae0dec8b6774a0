import type { Command } from 'commander';
import { requireSettings } from '../../lib/config.js';
import { circuitEntry } from '../../lib/console/circuitsPanel.js';
import type { CircuitEntry } from '../../lib/console/ports.js';
import { NON_TERMINAL_STATES } from '../../lib/domain/states.js';
import type { OperatorQueries } from '../../lib/ledger/operatorQueries.js';
import { activeHolds, transportNamesOf } from '../../lib/rate/TransportHolds.js';
import { failoverChainsOf, readFailoverCircuits } from '../../lib/transports/health.js';
import { documentClientFor } from '../../lib/wiring.js';
import { ledgerFor, output, type TargetOptions, withTargetOptions } from '../localState.js';

export interface LedgerStats {
  rows: number;
  byState: Record<string, number>;
  /** Oldest age, in seconds, of the rows in each non-terminal state (since the row was created). */
  oldestWaitingSeconds: Record<string, number>;
  /** Notifications whose intent the ledger holds sealed (parked work the sweep owns). */
  sealed: number;
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
  const stats: LedgerStats = { rows: 0, byState: {}, oldestWaitingSeconds: {}, sealed: 0 };
  let cursor: string | undefined;
  do {
    const page = await queries.summaries(cursor);
    for (const row of page.items) {
      if (row.kind === 'seal') stats.sealed += 1;
      // Provider health items are read by key below (readFailoverCircuits), with the providers that
      // never failed; here they are only not rows.
      if (row.kind === 'provider_health') continue;
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

/** One circuit of `sendproof stats`: channel, place in the failover order, state, why, since when. */
export const circuitLine = (c: { channel: string } & CircuitEntry): string =>
  [
    `circuit ${c.channel} #${c.position} ${c.provider}: ${c.state}`,
    c.state === 'closed' ? ` (${c.failures} failures in the current ${c.windowSeconds} s window)` : '',
    c.openUntil ? ` until ${c.openUntil}` : '',
    c.probeUntil ? ` probing until ${c.probeUntil}` : '',
    c.probeDue ? ' (probe due)' : '',
    c.reason ? ` — ${c.reason.text}${c.reason.known ? ` (${c.reason.raw})` : ''}` : '',
    c.changedAt ? `; changed ${c.changedAt} by ${c.history[0]?.by ?? '?'}` : '',
  ].join('');

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
    const doc = documentClientFor(config);
    const { ledgerTable } = requireSettings(config, ['ledgerTable']);
    const holds = await activeHolds(doc, ledgerTable, transportNamesOf(config));
    // Provider circuits (issue 29): each failover channel's providers in order, closed ones too, from one
    // BatchGetItem of their health items; the same entries as the console's circuits panel.
    const now = Date.now();
    const circuits: Array<{ channel: string } & CircuitEntry> = (
      await readFailoverCircuits(doc, ledgerTable, failoverChainsOf(config))
    ).flatMap(({ channel, circuits: views }) =>
      views.map((view, i) => ({
        channel,
        ...circuitEntry(view, i + 1, config.providerCircuit.windowSeconds, now),
      })),
    );
    const stats = { ...scanned, holds, circuits };
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
        ...stats.circuits.map(circuitLine),
      ].join('\n'),
    );
  });
};
