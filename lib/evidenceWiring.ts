import { type Config, requireSettings } from './config.js';
import type { Clock } from './domain/clock.js';
import { DynamoEvidenceStore } from './evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder, type EvidenceRecorderDeps } from './evidence/EvidenceRecorder.js';
import { labelKeysFor } from './evidence/labelAuth.js';
import type { OptSignalDeps } from './evidence/optSignals.js';
import { PullEvidence, type PullEvidenceDeps, restEventFeed } from './evidence/PullEvidence.js';
import { DynamoSuppressionList } from './ledger/DynamoSuppressionList.js';
import { resolveContentHashKey } from './secrets/contentHashKey.js';
import { documentClientFor, ledgerFor, purposesFor } from './wiring.js';

/**
 * The evidence pieces the evidence, webhook and reconcile functions build from config (lib/wiring.ts has
 * the rest). Its own module so the dispatcher, which applies recorded evidence only to a row that has some,
 * imports it on that first row and not at its cold start (functions/dispatch/index.ts).
 */
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
  extra: Pick<PullEvidenceDeps, 'logger' | 'metrics'> & {
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
