import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { systemClock } from '../../lib/domain/clock.js';
import { Reconciler } from '../../lib/reconcile/Reconciler.js';
import { providerChainsFor } from '../../lib/transports/configured.js';
import { purposesFor } from '../../lib/wiring.js';
import { ledgerFor, output, type TargetOptions, withTargetOptions } from '../localState.js';

export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('reconcile')
      .description(
        'run one reconcile pass now: every page of unknown rows, resolved from evidence or quarantined',
      )
      .option('--page-size <n>', 'rows per attention-index page', '25')
      .option('--concurrency <n>', 'rows resolved at once', '5')
      .option('--json', 'machine-readable output'),
  ).action(async (options: TargetOptions & { json?: boolean; pageSize: string; concurrency: string }) => {
    const { ledger, config } = ledgerFor(options);
    const runId = `cli-${randomUUID().slice(0, 8)}`;
    const reconciler = new Reconciler({
      ledger,
      ...((providers) => ({ transports: { email: providers.email[0]!, sms: providers.sms[0]! }, providers }))(
        providerChainsFor(config),
      ),
      purposes: purposesFor(config),
      clock: systemClock,
      runId,
      pageSize: Number(options.pageSize),
      concurrency: Number(options.concurrency),
    });
    const before = await reconciler.census();
    process.stderr.write(
      `reconcile ${runId}: ${before.unknownRows} unknown, ${before.quarantinedRows} quarantined before the run\n`,
    );
    const summary = await reconciler.runAll((page, n) =>
      process.stderr.write(
        `  page ${n}: ${page.processed} rows, ${page.resolved} resolved, ${page.quarantined} quarantined, ${page.left} left\n`,
      ),
    );
    const after = await reconciler.census();
    const { outcomes, ...counts } = summary;
    output(options.json, { runId, before, ...counts, after, outcomes }, () =>
      [
        `reconcile ${runId}: ${counts.processed} processed in ${counts.pages} page(s) — ` +
          `${counts.resolved} resolved, ${counts.quarantined} quarantined, ${counts.left} left waiting, ${counts.raced} raced`,
        ...outcomes.map(
          (o) => `  ${o.action.padEnd(20)} ${o.state.padEnd(12)} ${o.dedupeKey}${o.why ? ` (${o.why})` : ''}`,
        ),
        `now: ${after.unknownRows} unknown, ${after.quarantinedRows} quarantined (decide with \`sendproof resolve\`)`,
      ].join('\n'),
    );
  });
};
