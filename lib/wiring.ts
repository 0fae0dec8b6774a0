import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { clientOptionsFor } from './aws/clientOptions.js';
import { dynamoDocumentClient } from './aws/dynamoClients.js';
import { type Config, requireSettings } from './config.js';
import type { Clock } from './domain/clock.js';
import { PurposeRegistry } from './domain/purposes.js';
import { DynamoEvidenceStore } from './evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder, type EvidenceRecorderDeps } from './evidence/EvidenceRecorder.js';
import { labelKeysFor } from './evidence/labelAuth.js';
import type { OptSignalDeps } from './evidence/optSignals.js';
import { PullEvidence, restEventFeed } from './evidence/PullEvidence.js';
import { DynamoLedger } from './ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from './ledger/DynamoOperatorQueries.js';
import { DynamoSuppressionList } from './ledger/DynamoSuppressionList.js';
import { resolveContentHashKey } from './secrets/contentHashKey.js';
import { ProviderHealth, type ProviderHealthDeps } from './transports/health.js';
import { DynamoReportCounters } from './transports/ReportCounters.js';
import { ReportLagJudge } from './transports/ReportLagJudge.js';

/**
 * The small pieces every entry and the CLI build from config, each built one way only. Kept apart from
 * lib/dispatchRuntime.ts (the dispatcher's full set) so the reconcile and evidence functions load only these.
 */
export const documentClientFor = (config: Config): DynamoDBDocumentClient =>
  dynamoDocumentClient(clientOptionsFor(config, 'endpointDynamoDb'));

export const ledgerFor = (config: Config, documentClient = documentClientFor(config)): DynamoLedger =>
  new DynamoLedger(documentClient, requireSettings(config, ['ledgerTable']).ledgerTable, {
    attentionShards: config.attentionShards,
  });

/** Operator scans of the ledger table (CLI only: the functions' role may not Scan). */
export const operatorQueriesFor = (config: Config, documentClient = documentClientFor(config)) =>
  new DynamoOperatorQueries(documentClient, requireSettings(config, ['ledgerTable']).ledgerTable);

export const purposesFor = (config: Config): PurposeRegistry =>
  PurposeRegistry.withOverrides(config.purposes);

export const evidenceStoreFor = (config: Config, documentClient = documentClientFor(config)) =>
  new DynamoEvidenceStore(documentClient, requireSettings(config, ['ledgerTable']).ledgerTable);

/**
 * The evidence recorder over the ledger table's `ev#` items, opening labels with the deployment's secret
 * (the content-hash secret: every function that records evidence reads it). The suppression list is wired
 * when the configuration names one (the evidence function's does: bounces and complaints suppress).
 */
export const evidenceRecorderFor = (
  config: Config,
  extra: { clock: Clock } & Pick<EvidenceRecorderDeps, 'logger' | 'metrics'>,
  documentClient = documentClientFor(config),
): EvidenceRecorder =>
  new EvidenceRecorder({
    ledger: ledgerFor(config, documentClient),
    store: evidenceStoreFor(config, documentClient),
    purposes: purposesFor(config),
    // Every event's label is opened with the deployment's secret before anything is written.
    labels: labelKeysFor(config),
    ...(config.suppressionTable
      ? { suppressions: new DynamoSuppressionList(documentClient, config.suppressionTable) }
      : {}),
    ...extra,
  });

/**
 * What an inbound STOP/START reply acts on (lib/evidence/optSignals.ts): the suppression list, and the
 * content-hash key the number's ref is hashed with (read once, when the first reply arrives). Undefined
 * without a suppression table.
 */
export const optSignalsFor = (
  config: Config,
  extra: Pick<OptSignalDeps, 'clock' | 'logger'>,
  documentClient = documentClientFor(config),
): OptSignalDeps | undefined => {
  if (!config.suppressionTable) return undefined;
  let key: Promise<string> | undefined;
  return {
    suppressions: new DynamoSuppressionList(documentClient, config.suppressionTable),
    numberKey: () => {
      key ??= resolveContentHashKey(config);
      return key;
    },
    ...extra,
  };
};

/**
 * The REST provider's pull feed (`GET {base}/v1/events?after=`), when a channel uses the REST convention
 * (or the local simulator). Undefined otherwise: SES, SMS, Resend, Twilio and SendGrid push instead.
 */
export const pullEvidenceFor = (
  config: Config,
  recorder: EvidenceRecorder,
  extra: Pick<import('./evidence/PullEvidence.js').PullEvidenceDeps, 'logger' | 'metrics'> & {
    now: () => number;
  },
  documentClient = documentClientFor(config),
): PullEvidence | undefined => {
  const pulls =
    ['rest', 'simulator'].includes(config.emailTransport) ||
    ['rest', 'simulator'].includes(config.smsTransport);
  if (!pulls || !config.restBaseUrl) return undefined;
  return new PullEvidence({
    name: 'rest',
    feed: restEventFeed({ baseUrl: config.restBaseUrl }),
    store: evidenceStoreFor(config, documentClient),
    recorder,
    ...extra,
  });
};

/**
 * The report-lag judgement (lib/transports/ReportLagJudge.ts) over the providers of every channel that
 * fails over (a circuit is only read by a dispatcher with somewhere to skip to), with the circuits'
 * settings; undefined when no channel has a second provider.
 */
export const reportLagJudgeFor = (
  config: Config,
  providers: { email: ReadonlyArray<{ name: string }>; sms: ReadonlyArray<{ name: string }> },
  deps: Omit<ProviderHealthDeps, 'settings'>,
  documentClient = documentClientFor(config),
): { judge: ReportLagJudge; providers: string[] } | undefined => {
  const judged = [providers.email, providers.sms].filter((chain) => chain.length > 1).flat();
  if (judged.length === 0) return undefined;
  const table = requireSettings(config, ['ledgerTable']).ledgerTable;
  return {
    providers: [...new Set(judged.map((t) => t.name))],
    judge: new ReportLagJudge({
      counters: new DynamoReportCounters(documentClient, table),
      circuits: new ProviderHealth(documentClient, table, { ...deps, settings: config.providerCircuit }),
      settings: config.providerCircuit,
      now: deps.now,
      ...(deps.logger ? { logger: deps.logger } : {}),
    }),
  };
};
