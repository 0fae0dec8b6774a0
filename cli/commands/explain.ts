import type { Command } from 'commander';
import { orderedByLedger } from '../../lib/archive/bundle.js';
import { loadNamedQueries } from '../../lib/archive/namedQueries.js';
import { clockedTimeline, describeEntry, formatGap } from '../../lib/console/clocks.js';
import type { DeliveryRecord } from '../../lib/ledger/port.js';
import { ledgerFor, output, type TargetOptions, withTargetOptions } from '../localState.js';
import { describeRow, findRows } from './status.js';

interface ExplainOptions extends TargetOptions {
  json?: boolean;
  archiveDir?: string;
  tenant: string;
  from: string;
  to?: string;
}

/** The archive partitions to search: a dedupe key's own tenant (its first segment), and a day range. */
export const archiveScope = (
  keyOrEvent: string,
  options: Pick<ExplainOptions, 'tenant' | 'from' | 'to'>,
  now: number = Date.now(),
): [string, string, string] => [
  keyOrEvent.includes(':') ? keyOrEvent.split(':')[0]! : options.tenant,
  options.from,
  options.to ?? new Date(now + 86_400_000).toISOString().slice(0, 10),
];

/** A row's history and its provider facts in the ledger's order, each time on its own clock. */
export const describeTimeline = (row: DeliveryRecord): string =>
  [
    `  timeline (in the order the ledger saw it; each time on its own clock):`,
    ...clockedTimeline(row).map((e) => `    ${e.kind === 'fact' ? '  ' : ''}${describeEntry(e)}`),
  ].join('\n');

/**
 * Archived lines as `explain` prints them: in the ledger's order (a provider's fact after the
 * transition it was recorded after, see orderedByLedger), each naming its clock.
 */
export const describeArchived = (rows: ReadonlyArray<Record<string, unknown>>): string[] =>
  orderedByLedger(rows).map((r) => {
    const head = `  ${String(r.transition_at)} ${r.clock === 'ledger' ? 'ledger  ' : 'provider'} ${String(r.dedupe_key)} ${String(r.from_state ?? '∅')} → ${String(r.to_state)} by ${String(r.actor)}`;
    const tail = `${r.reason ? ` (${String(r.reason)})` : ''}${r.transport_message_id ? ` msg=${String(r.transport_message_id)}` : ''}`;
    const gap = Number(r.ledger_at_ms) - Number(r.transition_at_ms);
    const note =
      r.clock === 'provider' && gap > 0
        ? ` [${formatGap(gap)} before the ledger recorded v${String(r.version)}; two clocks, recorded after it]`
        : '';
    return `${head}${tail}${note}`;
  });

/**
 * The ledger row (current state, while its TTL lasts) next to the archived timeline (append-only, kept
 * under Object Lock long after the row is gone), for one dedupe key or every row of an event.
 */
export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('explain <keyOrEventId>')
      .description('timeline of a notification from the ledger and from the compliance archive')
      .option('--archive-dir <dir>', 'local archive folder (default: from .local/state.json)')
      .option(
        '--tenant <tenant>',
        "tenant of an event id (a dedupe key names its own; default: the ledger row's, else default)",
        'default',
      )
      .option('--from <day>', 'first archive day searched, YYYY-MM-DD', '2000-01-01')
      .option('--to <day>', 'last archive day searched, YYYY-MM-DD (default: tomorrow, UTC)')
      .option('--json', 'machine-readable output'),
  ).action(async (keyOrEvent: string, options: ExplainOptions) => {
    const ports = ledgerFor(options);
    const { target } = ports;
    const rows = await findRows(ports, keyOrEvent);
    const archiveDir = options.archiveDir ?? target.archiveDir;
    let archived: Array<Record<string, unknown>> = [];
    if (archiveDir) {
      // Loaded here, not at the top: DuckDB's native module costs ~0.6 s, which every other command skips.
      const { DuckDbAudit, hasArchiveObjects } = await import('../../lib/archive/DuckDbAudit.js');
      const query = loadNamedQueries().find((q) => q.name === 'explain-notification');
      if (!query) throw new Error('named query explain-notification is missing from queries/');
      if (!hasArchiveObjects(archiveDir))
        process.stderr.write(
          `sendproof: no archive objects under ${archiveDir}; the archived timeline is empty\n`,
        );
      const audit = await DuckDbAudit.open(archiveDir);
      try {
        // An event id names no tenant: take the ledger rows' (while they last), else --tenant.
        const tenant = rows[0]?.pk.split(':')[0];
        const scope = archiveScope(
          keyOrEvent,
          tenant && options.tenant === 'default' ? { ...options, tenant } : options,
        );
        archived = (await audit.runNamed(query, [...scope, keyOrEvent])).rows;
      } finally {
        audit.close();
      }
    }
    const timelines = rows.map((row) => ({ dedupeKey: row.pk, entries: clockedTimeline(row) }));
    output(options.json, { ledger: rows, timelines, archive: orderedByLedger(archived) }, () =>
      [
        rows.length
          ? rows.map((row) => `${describeRow(row)}\n${describeTimeline(row)}`).join('\n\n')
          : `no ledger row for ${keyOrEvent} (expired by TTL?)`,
        '',
        archiveDir
          ? `archive (${archived.length} transitions, in the ledger's order; ledger or provider clock):`
          : 'archive: not available (pass --archive-dir)',
        ...describeArchived(archived),
      ].join('\n'),
    );
  });
};
