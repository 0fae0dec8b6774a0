import { type Command, Option } from 'commander';
import { systemClock } from '../../lib/domain/clock.js';
import {
  CancelRefusedError,
  type CancelReport,
  cancelNotifications,
  type RowCancelOutcome,
} from '../../lib/publish/cancelNotifications.js';
import { transportsFor } from '../../lib/transports/configured.js';
import { purposesFor } from '../../lib/wiring.js';
import { ledgerFor, output, type TargetOptions, withTargetOptions } from '../localState.js';

interface CancelOptions extends TargetOptions {
  tenant: string;
  purpose?: string;
  channel?: 'email' | 'sms';
  reason: string;
  operator: string;
  waitSeconds: string;
  json?: boolean;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** One line per row: which came first, the cancel or the dispatch. */
export const describeOutcome = (o: RowCancelOutcome): string => {
  switch (o.result) {
    case 'cancelled':
      return o.how === 'provider_confirmed'
        ? `cancelled (the provider confirmed it at ${iso(o.at)})`
        : o.how === 'marker_seen_by_dispatch'
          ? `cancelled (its dispatch read the cancel before calling the provider, ${iso(o.at)})`
          : `cancelled at ${iso(o.at)}`;
    case 'already_cancelled':
      return `already cancelled at ${iso(o.at)} by ${o.by}`;
    case 'too_late':
      return `too late: dispatching since ${iso(o.since)}; outcome ${o.outcome}${o.providerMessageId ? ` (${o.providerMessageId})` : ''}`;
    case 'cancel_too_late':
      return `cancel_too_late: handed to ${o.transport ?? 'the provider'} at ${iso(o.handoffAt)}${o.providerAnswer ? ` (provider said ${o.providerAnswer})` : ''}`;
    case 'cancel_unconfirmed':
      return `not confirmed by the provider (${o.providerAnswer}): run the cancel again`;
    case 'not_sent':
      return `not sent anyway (${o.state})`;
    case 'not_cancellable':
      return `not cancellable: purpose ${o.purpose} does not declare cancellable`;
  }
};

export const describeReport = (report: CancelReport): string =>
  [
    `cancel ${report.order.id} of ${report.tenant}/${report.eventId} by ${report.order.by}: ` +
      (report.committed
        ? `committed at ${iso(report.committedAt)}`
        : `already committed at ${iso(report.order.at)} (reason: ${report.order.reason})`),
    '  every later dispatch of this event in scope reads the marker and is stopped',
    ...report.rows.map((r) => `  ${r.dedupeKey}: ${describeOutcome(r.outcome)}`),
  ].join('\n');

export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('cancel <eventId>')
      .description(
        'withdraw the notifications of one business event (every recipient and channel in scope) and report, per row, whether the cancel or the dispatch came first',
      )
      .option('--tenant <tenant>', 'tenant of the event', 'default')
      .option('--purpose <purpose>', 'only this purpose (default: every cancellable purpose)')
      .addOption(new Option('--channel <channel>', 'only this channel').choices(['email', 'sms']))
      .requiredOption('--reason <text>', 'why (kept in the row history: no addresses or phone numbers)')
      .requiredOption('--operator <id>', 'who cancels (recorded as operator:<id>)')
      .option('--wait-seconds <n>', 'how long to wait for a row already dispatching to finish', '10')
      .option('--json', 'machine-readable output'),
  ).action(async (eventId: string, options: CancelOptions) => {
    const { ledger, queries, config } = ledgerFor(options);
    let transports: ReturnType<typeof transportsFor> | undefined;
    try {
      transports = transportsFor(config);
    } catch {
      // Without provider credentials in this shell, provider-held rows are reported as unconfirmed.
      transports = undefined;
    }
    try {
      const report = await cancelNotifications(
        {
          ledger,
          queries,
          purposes: purposesFor(config),
          clock: systemClock,
          ...(transports ? { transports } : {}),
        },
        {
          tenant: options.tenant,
          eventId,
          ...(options.purpose ? { purpose: options.purpose } : {}),
          ...(options.channel ? { channel: options.channel } : {}),
          reason: options.reason,
          operator: options.operator,
          waitMs: Math.round(Number(options.waitSeconds) * 1000),
        },
      );
      output(options.json, report, () => describeReport(report));
    } catch (error) {
      if (!(error instanceof CancelRefusedError)) throw error;
      if (options.json) output(true, { error: 'cancel_refused', issues: error.issues }, () => '');
      else process.stderr.write(`sendproof: cancel refused: ${error.message}\n`);
      process.exitCode = 2;
    }
  });
};
