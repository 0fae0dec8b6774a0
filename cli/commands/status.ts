import type { Command } from 'commander';
import type { OperatorQueries } from '../../lib/ledger/operatorQueries.js';
import type { DeliveryRecord, Ledger } from '../../lib/ledger/port.js';
import { describeProviderAttempts } from '../../lib/ledger/providerAttempts.js';
import { ledgerFor, output, type TargetOptions, withTargetOptions } from '../localState.js';

/** A readable key has at least five `:`-separated parts; anything else is taken as an event id. */
export const findRows = async (
  ports: { ledger: Pick<Ledger, 'get'>; queries: Pick<OperatorQueries, 'findByEvent'> },
  keyOrEvent: string,
): Promise<DeliveryRecord[]> => {
  const { ledger, queries } = ports;
  if (keyOrEvent.split(':').length >= 5 || keyOrEvent.startsWith('invalid#')) {
    const row = await ledger.get(keyOrEvent);
    return row ? [row] : [];
  }
  return queries.findByEvent(keyOrEvent);
};

const iso = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());

export const describeRow = (row: DeliveryRecord): string =>
  [
    `${row.pk}`,
    `  state ${row.state} (version ${row.version}, ${row.kind}) · channel ${row.channel} · transport ${row.transport ?? '-'}`,
    `  provider message id ${row.providerMessageId ?? '-'} · attempts ${row.attempts} · content ${row.contentHash}`,
    `  template ${row.templateId}@${row.templateRevision} (${row.templateOwner}) · policy ${row.policyVersion}`,
    ...(row.supersededBy ? [`  superseded by ${row.supersededBy}`] : []),
    ...(row.resendOf ? [`  resend of ${row.resendOf}`] : []),
    ...(row.blockedAgainst ? [`  blocked against ${row.blockedAgainst}`] : []),
    ...(row.issues ? row.issues.map((i) => `  invalid: ${i.field}: ${i.message}`) : []),
    ...(row.delivery
      ? [
          `  delivery ${row.delivery.status} at ${iso(row.delivery.at)} (${row.delivery.why})`,
          ...row.delivery.h.map((f) => `    ${iso(f.at)} ${f.f.padEnd(18)} by ${f.by} (${f.why})`),
        ]
      : []),
    ...(row.history.some((h) => h.s === 'dispatching')
      ? [`  attempts by provider: ${describeProviderAttempts(row)}`]
      : []),
    '  history:',
    ...row.history.map(
      (h, i) =>
        `    v${i + 1} ${iso(h.at)} → ${h.s.padEnd(18)} by ${h.by}${h.p ? ` [${h.p}]` : ''}${h.why ? ` (${h.why})` : ''}${h.msg ? ` msg=${h.msg}` : ''}`,
    ),
  ].join('\n');

export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('status <keyOrEventId>')
      .description(
        'current state, version, transitions and transport ids of a dedupe key or of every row of an event',
      )
      .option('--json', 'machine-readable output'),
  ).action(async (keyOrEvent: string, options: TargetOptions & { json?: boolean }) => {
    const rows = await findRows(ledgerFor(options), keyOrEvent);
    if (rows.length === 0) {
      process.stderr.write(`sendproof: no ledger row for ${keyOrEvent}\n`);
      process.exitCode = 2;
      return;
    }
    output(options.json, rows, () => rows.map(describeRow).join('\n\n'));
  });
};
