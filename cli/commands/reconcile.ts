import { randomUUID } from 'node:crypto';
import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import type { Command } from 'commander';
import { dynamoDocumentClient } from '../../lib/aws/clients.js';
import { type Config, ConfigSchema, ENV, loadConfig } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { Reconciler } from '../../lib/reconcile/Reconciler.js';
import { createTransports, type ProviderSecrets } from '../../lib/transports/index.js';
import { output, resolveTarget, type Target, type TargetOptions, withTargetOptions } from '../localState.js';

export interface LedgerTargetOptions extends TargetOptions {
  endpointDynamodb?: string;
}

/** The ledger target, with `--endpoint-dynamodb` taking precedence over the local stack's endpoint. */
export const ledgerTarget = (options: LedgerTargetOptions): { target: Target; ledger: DynamoLedger } => {
  const resolved = resolveTarget(options);
  const target = options.endpointDynamodb
    ? { ...resolved, endpointDynamoDb: options.endpointDynamodb }
    : resolved;
  const client = dynamoDocumentClient({
    region: target.region,
    ...(target.endpointDynamoDb ? { endpoint: target.endpointDynamoDb } : {}),
  });
  return { target, ledger: new DynamoLedger(client, target.ledgerTable) };
};

/**
 * Transports the reconciler may ask: the local stack's (simulator / local SES) or, against AWS, the ones
 * the deployment's SENDPROOF_* settings name (with the provider secret for lookups).
 */
const transportConfig = (target: Target): Config =>
  target.local
    ? ConfigSchema.parse({
        ledgerTable: target.ledgerTable,
        region: target.region,
        emailTransport: target.local.emailTransport,
        smsTransport: target.local.smsTransport,
        restBaseUrl: target.local.simulator,
        endpointSes: target.local.ses,
      })
    : loadConfig({ ...process.env, [ENV.ledgerTable]: target.ledgerTable, [ENV.region]: target.region });

export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('reconcile')
      .description(
        'run one reconcile pass now: every page of unknown rows, resolved from evidence or quarantined',
      )
      .option('--endpoint-dynamodb <url>', 'DynamoDB endpoint (local servers)')
      .option('--page-size <n>', 'rows per attention-index page', '25')
      .option('--concurrency <n>', 'rows resolved at once', '5')
      .option('--json', 'machine-readable output'),
  ).action(
    async (options: LedgerTargetOptions & { json?: boolean; pageSize: string; concurrency: string }) => {
      const { target, ledger } = ledgerTarget(options);
      const config = transportConfig(target);
      const secretArn = config.providerSecretArn;
      const runId = `cli-${randomUUID().slice(0, 8)}`;
      const reconciler = new Reconciler({
        ledger,
        transports: createTransports(
          config,
          secretArn
            ? {
                providerSecrets: async () =>
                  (await getSecret(secretArn, { maxAge: 300, transform: 'json' })) as ProviderSecrets,
              }
            : {},
        ),
        purposes: PurposeRegistry.withOverrides(config.purposes),
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
            (o) =>
              `  ${o.action.padEnd(20)} ${o.state.padEnd(12)} ${o.dedupeKey}${o.why ? ` (${o.why})` : ''}`,
          ),
          `now: ${after.unknownRows} unknown, ${after.quarantinedRows} quarantined (decide with \`sendproof resolve\`)`,
        ].join('\n'),
      );
    },
  );
};
