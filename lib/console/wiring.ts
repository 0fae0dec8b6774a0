import { clientOptionsFor } from '../aws/clientOptions.js';
import type { Config } from '../config.js';
import { systemClock } from '../domain/clock.js';
import { ConfigurationError } from '../domain/errors.js';
import { DynamoSuppressionList } from '../ledger/DynamoSuppressionList.js';
import { onFirstUse } from '../onFirstUse.js';
import { cancelNotifications } from '../publish/cancelNotifications.js';
import { transportNamesOf } from '../rate/TransportHolds.js';
import { type IntentPublisher, OperatorDecisions } from '../reconcile/OperatorDecisions.js';
import { failoverChainsOf } from '../transports/health.js';
import { loadProviderChains } from '../transports/load.js';
import { documentClientFor, ledgerFor, operatorQueriesFor, purposesFor } from '../wiring.js';
import {
  capabilitiesOf,
  dynamoLedgerStats,
  dynamoNotificationSearch,
  dynamoSuppressions,
} from './adapters.js';
import type { Authenticator } from './auth.js';
import {
  type BundleExporter,
  type ConsoleDeps,
  type ConsoleHandler,
  createConsoleHandler,
} from './ConsoleApi.js';
import { providerCircuitsReadModel } from './circuitsPanel.js';
import { transportHoldsReadModel } from './holdsPanel.js';
import type { AuditLog, AuditQueries } from './ports.js';
import { sloPanelReadModel } from './sloPanel.js';
import type { StaticFiles } from './staticFiles.js';

export interface ConsoleWiring {
  authenticate: Authenticator;
  auditLog: AuditLog;
  /** The archive's named queries (local: DuckDB over the mirror folder). Absent: archive routes say so. */
  audit?: AuditQueries;
  /** The timeline's export-bundle download (local: the archive folder). Absent: the link is not shown. */
  exportBundle?: BundleExporter;
  staticFiles?: StaticFiles;
  allowedOrigin?: string;
  decisionRowsPerMinute?: number;
}

/**
 * Capabilities of the configured transports. The console never sends or looks up, so it holds no
 * provider credentials: the transports are built with a credentials source that refuses, and only their
 * (static) capabilities are read. A configuration they cannot be built from shows none. Only the
 * configured adapters are loaded (lib/transports/load.ts), so the others stay off the cold-start path.
 */
export const consoleCapabilities = async (config: Config) => {
  try {
    const chains = await loadProviderChains(config, {
      providerSecrets: async () => {
        throw new ConfigurationError('the console holds no provider credentials');
      },
    });
    return capabilitiesOf({ email: chains.email[0]!, sms: chains.sms[0]! });
  } catch {
    return () => undefined;
  }
};

/** The console handler built from config the one way both the Lambda and the local server use. */
export const consoleHandlerFor = async (
  config: Config & { ledgerTable: string },
  wiring: ConsoleWiring,
): Promise<{ handler: ConsoleHandler; deps: ConsoleDeps }> => {
  const doc = documentClientFor(config);
  const ledger = ledgerFor(config, doc);
  // SQS serves two actions only: a resend decision publishes to the intake queue, the overview reads the
  // dead-letter queue's depth. Its client loads on the first of them, not at the cold start; a failed load
  // fails that request (a 500) and the next one loads again.
  const queues = onFirstUse(async () => {
    const [{ sqsClient }, { SqsIntentPublisher }, { sqsQueueDepth }] = await Promise.all([
      import('../aws/queueClient.js'),
      import('../aws/SqsIntentPublisher.js'),
      import('./queueDepth.js'),
    ]);
    const sqs = sqsClient(clientOptionsFor(config, 'endpointSqs'));
    return {
      publisher: config.queueUrl ? new SqsIntentPublisher(sqs, config.queueUrl) : undefined,
      dlqDepth: config.dlqUrl ? sqsQueueDepth(sqs, config.dlqUrl) : undefined,
    };
  });
  const publisher: IntentPublisher = {
    publish: async (body) => (await queues()).publisher!.publish(body),
  };
  const audit = wiring.audit;
  const deps: ConsoleDeps = {
    ledger,
    decisions: new OperatorDecisions({
      ledger,
      purposes: purposesFor(config),
      clock: systemClock,
      ...(config.queueUrl ? { publisher } : {}),
    }),
    authenticate: wiring.authenticate,
    clock: systemClock,
    stats: dynamoLedgerStats(doc, config.ledgerTable, () => systemClock.now()),
    search: dynamoNotificationSearch(doc, config.ledgerTable, ledger),
    // Building the transports reads no secret: credentials are fetched on a send or a lookup only.
    capabilities: await consoleCapabilities(config),
    auditLog: wiring.auditLog,
    ...(audit ? { audit } : {}),
    // The SLO panel reads the archive through the same named queries (slo-attainment): DuckDB locally,
    // Athena in AWS. Without an archive there is no panel, never a zero.
    ...(audit
      ? { slo: sloPanelReadModel({ audit, purposes: purposesFor(config), clock: systemClock }) }
      : {}),
    ...(wiring.exportBundle ? { exportBundle: wiring.exportBundle } : {}),
    ...(config.suppressionTable
      ? {
          suppressions: dynamoSuppressions(doc, config.suppressionTable),
          suppressionList: new DynamoSuppressionList(doc, config.suppressionTable),
        }
      : {}),
    // No transports: the console holds no provider credentials (a provider-held message is reported
    // cancel_unconfirmed; the CLI, run where the credentials are, calls the provider's cancel route).
    cancel: (request) =>
      cancelNotifications(
        {
          ledger,
          queries: operatorQueriesFor(config, doc),
          purposes: purposesFor(config),
          clock: systemClock,
        },
        request,
      ),
    ...(config.dlqUrl ? { dlqDepth: async () => (await queues()).dlqDepth!() } : {}),
    // Transport-wide holds (issue 25): the hold items the dispatchers write, read from the ledger table.
    holds: transportHoldsReadModel(doc, config.ledgerTable, transportNamesOf(config)),
    // Provider circuits (issue 29): the failover channels' providers in order, their health items read in
    // one BatchGetItem (none without failover: no channel has a circuit then).
    circuits: providerCircuitsReadModel(
      doc,
      config.ledgerTable,
      failoverChainsOf(config),
      config.providerCircuit.windowSeconds,
    ),
    ...(wiring.staticFiles ? { staticFiles: wiring.staticFiles } : {}),
    ...(wiring.allowedOrigin ? { allowedOrigin: wiring.allowedOrigin } : {}),
    ...(wiring.decisionRowsPerMinute ? { decisionRowsPerMinute: wiring.decisionRowsPerMinute } : {}),
  };
  return { handler: createConsoleHandler(deps), deps };
};
