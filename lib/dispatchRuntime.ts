import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type AttachmentStore, UriAttachmentStore } from './attachments/AttachmentStore.js';
import { clientOptionsFor } from './aws/clientOptions.js';
import { isRecordingAwsCommands, recordKeyringCall } from './aws/commandLog.js';
import { type Config, FUNCTION_SETTINGS, failsOver, requireSettings } from './config.js';
import { ConfigurationError } from './domain/errors.js';
import type { PurposeRegistry } from './domain/purposes.js';
import { DynamoGateFacts } from './ledger/DynamoGateFacts.js';
import { DynamoSuppressionList } from './ledger/DynamoSuppressionList.js';
import type { GateFactsReader, Ledger, SuppressionList } from './ledger/port.js';
import { Admission, type DimensionedMetrics } from './rate/Admission.js';
import { Pacer, TokenSlots } from './rate/Pacer.js';
import { SpendBreaker } from './rate/SpendBreaker.js';
import type { IntentSealer } from './seal/IntentSealer.js';
import { lazySealer } from './seal/lazySealer.js';
import { resolveContentHashKey } from './secrets/contentHashKey.js';
import { FileTemplateStore } from './templates/FileTemplateStore.js';
import type { TemplateRenderer } from './templates/port.js';
import type { ProviderHealth, ProviderHealthDeps } from './transports/health.js';
import { loadProviderChainsFor } from './transports/load.js';
import type { Transport } from './transports/port.js';
import { documentClientFor, ledgerFor, purposesFor } from './wiring.js';

/**
 * Everything the dispatch function needs (and only it: the reconcile and evidence functions build their
 * smaller sets from lib/wiring.ts), built once per process (a Lambda cold start or a crash worker).
 */
export interface Runtime {
  config: Config;
  documentClient: DynamoDBDocumentClient;
  ledger: Ledger;
  suppressions: SuppressionList;
  renderer: TemplateRenderer;
  transports: { email: Transport; sms: Transport };
  /** Each channel's providers in failover order (the first is `transports[channel]`). */
  providers: { email: readonly Transport[]; sms: readonly Transport[] };
  attachments: AttachmentStore;
  purposes: PurposeRegistry;
  contentHashKey: string;
  sealer: IntentSealer;
  gateFacts: GateFactsReader;
}

/**
 * Rate control and SMS anti-abuse for a dispatcher (lib/rate): the shared pace when SENDPROOF_RATE_LIMITS
 * names one, and the SMS country rules and spend breakers the purposes declare (always on).
 */
export const admissionFor = (
  config: Config,
  documentClient: DynamoDBDocumentClient,
  deps: {
    now: () => number;
    workerId: string;
    metrics?: DimensionedMetrics;
    logger?: {
      info(m: string, ...e: Array<Record<string, unknown>>): void;
      warn(m: string, ...e: Array<Record<string, unknown>>): void;
    };
  },
): Admission => {
  const table = requireSettings(config, ['ledgerTable']).ledgerTable;
  const pacer = config.rateLimits
    ? new Pacer({
        slots: new TokenSlots(documentClient, table),
        settings: config.rateLimits,
        now: deps.now,
        ...(deps.metrics ? { metrics: deps.metrics } : {}),
        ...(deps.logger ? { logger: deps.logger } : {}),
      })
    : undefined;
  const breaker = new SpendBreaker(documentClient, table, {
    workerId: deps.workerId,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.logger ? { logger: deps.logger } : {}),
  });
  return new Admission({
    ...(pacer ? { pacer } : {}),
    breaker,
    now: deps.now,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
};

/** A fixed seal key for laptops and tests only (32 bytes): a deployed stack seals with its KMS key. */
const LOCAL_SEAL_KEY = Buffer.from('sendproof-local-seal-key-32bytes', 'utf8');

/**
 * KMS in AWS; a raw AES key locally. Refuses to run deployed without a KMS key. The Encryption SDK loads
 * on the first seal or open (lib/seal/lazySealer.ts); a malformed local key is still refused here.
 */
export const sealerFor = (config: Config): IntentSealer => recordedKeyring(config, keyringSealer(config));

const keyringSealer = (config: Config): IntentSealer => {
  const load = () => import('./seal/IntentSealer.js');
  if (config.sealKeyArn) {
    const arn = config.sealKeyArn;
    return lazySealer(async () => (await load()).kmsSealer(arn));
  }
  const key = config.sealLocalKey
    ? Buffer.from(config.sealLocalKey, 'base64')
    : config.endpointDynamoDb
      ? LOCAL_SEAL_KEY
      : undefined;
  if (!key)
    throw new ConfigurationError(
      'no seal key: set SENDPROOF_SEAL_KEY_ARN (deployed) or SENDPROOF_SEAL_LOCAL_KEY (local)',
    );
  if (key.byteLength !== 32) throw new ConfigurationError('the local seal key must be 32 bytes');
  return lazySealer(async () => (await load()).localSealer(key));
};

/**
 * Test runs only (the command recorder on, lib/aws/commandLog.ts): each seal and open is recorded as the
 * KMS call the deployed keyring makes on the seal key, so the IAM check covers the Encryption SDK too.
 */
const recordedKeyring = (config: Config, sealer: IntentSealer): IntentSealer => {
  if (!config.functionName || !isRecordingAwsCommands()) return sealer;
  const caller = { function: config.functionName, settings: config };
  return {
    seal: (body, logicalKey) => {
      recordKeyringCall(caller, 'GenerateDataKey', 'sealKeyArn');
      return sealer.seal(body, logicalKey);
    },
    open: (sealed, logicalKey) => {
      recordKeyringCall(caller, 'Decrypt', 'sealKeyArn');
      return sealer.open(sealed, logicalKey);
    },
  };
};

/**
 * The providers' shared circuits (one `health#<provider>` item each in the ledger table), when a channel
 * has more than one provider to fail over to; undefined otherwise (nothing to skip to, nothing read, and
 * lib/transports/health.ts not even loaded: it is off the cold-start path of a dispatcher without failover).
 */
export const circuitsFor = async (
  config: Config,
  documentClient: DynamoDBDocumentClient,
  deps: Omit<ProviderHealthDeps, 'settings'>,
): Promise<ProviderHealth | undefined> => {
  if (!failsOver(config)) return undefined;
  const table = requireSettings(config, ['ledgerTable']).ledgerTable;
  const { ProviderHealth } = await import('./transports/health.js');
  return new ProviderHealth(documentClient, table, { ...deps, settings: config.providerCircuit });
};

export const createRuntime = async (config: Config): Promise<Runtime> => {
  const settings = requireSettings(config, FUNCTION_SETTINGS.dispatch);
  const documentClient = documentClientFor(config);
  // Only the adapters the configuration names are loaded (lib/transports/load.ts), not all six.
  const providers = await loadProviderChainsFor(config);
  return {
    config,
    documentClient,
    ledger: ledgerFor(config, documentClient),
    suppressions: new DynamoSuppressionList(documentClient, settings.suppressionTable),
    renderer: new FileTemplateStore(config.templatesDir),
    transports: { email: providers.email[0]!, sms: providers.sms[0]! },
    providers,
    // The S3 SDK loads on the first s3:// attachment (lib/aws/storageClients.ts), not at init.
    attachments: new UriAttachmentStore(async () =>
      (await import('./aws/storageClients.js')).s3Client(clientOptionsFor(config, 'endpointS3')),
    ),
    purposes: purposesFor(config),
    contentHashKey: await resolveContentHashKey(config),
    sealer: sealerFor(config),
    gateFacts: new DynamoGateFacts(documentClient, {
      ledger: requireSettings(config, ['ledgerTable']).ledgerTable,
      suppression: settings.suppressionTable,
    }),
  };
};
