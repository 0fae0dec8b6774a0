import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type AttachmentStore, UriAttachmentStore } from './attachments/AttachmentStore.js';
import { dynamoDocumentClient, s3Client } from './aws/clients.js';
import type { Config } from './config.js';
import { ConfigurationError } from './domain/errors.js';
import { PurposeRegistry } from './domain/purposes.js';
import { DynamoLedger } from './ledger/DynamoLedger.js';
import { DynamoSuppressionList } from './ledger/DynamoSuppressionList.js';
import type { Ledger, SuppressionList } from './ledger/port.js';
import { FileTemplateStore } from './templates/FileTemplateStore.js';
import type { TemplateRenderer } from './templates/port.js';
import { createTransports, type ProviderSecrets } from './transports/index.js';
import type { Transport } from './transports/port.js';

/** Everything a function needs, built once per process (a Lambda cold start or the local stack). */
export interface Runtime {
  config: Config;
  documentClient: DynamoDBDocumentClient;
  ledger: Ledger;
  suppressions: SuppressionList;
  renderer: TemplateRenderer;
  transports: { email: Transport; sms: Transport };
  attachments: AttachmentStore;
  purposes: PurposeRegistry;
  contentHashKey: string;
}

/** A fixed key for laptops and tests only: a deployed stack always reads its key from Secrets Manager. */
const LOCAL_CONTENT_HASH_KEY = 'sendproof-local-content-hash-key-not-for-production';

const resolveContentHashKey = async (config: Config): Promise<string> => {
  if (config.contentHashSecretArn) {
    const value = await getSecret(config.contentHashSecretArn, { maxAge: 3600 });
    if (typeof value !== 'string' || value.length < 16)
      throw new ConfigurationError('the content-hash secret must be a string of at least 16 characters');
    return value;
  }
  if (config.contentHashKey) return config.contentHashKey;
  if (config.endpointDynamoDb) return LOCAL_CONTENT_HASH_KEY;
  throw new ConfigurationError(
    'no content-hash key: set SENDPROOF_CONTENT_HASH_SECRET_ARN (deployed) or SENDPROOF_CONTENT_HASH_KEY (local)',
  );
};

const providerSecrets = (config: Config): (() => Promise<ProviderSecrets>) | undefined => {
  const arn = config.providerSecretArn;
  if (!arn) return undefined;
  // Powertools caches the value for five minutes, so a rotated key is picked up without a restart.
  return async () => (await getSecret(arn, { maxAge: 300, transform: 'json' })) as ProviderSecrets;
};

export const createRuntime = async (config: Config): Promise<Runtime> => {
  const documentClient = dynamoDocumentClient({
    region: config.region,
    ...(config.endpointDynamoDb ? { endpoint: config.endpointDynamoDb } : {}),
  });
  if (!config.suppressionTable) throw new ConfigurationError('SENDPROOF_SUPPRESSION_TABLE is required');
  const secrets = providerSecrets(config);
  return {
    config,
    documentClient,
    ledger: new DynamoLedger(documentClient, config.ledgerTable),
    suppressions: new DynamoSuppressionList(documentClient, config.suppressionTable),
    renderer: new FileTemplateStore(config.templatesDir),
    transports: createTransports(config, secrets ? { providerSecrets: secrets } : {}),
    attachments: new UriAttachmentStore(
      s3Client({ region: config.region, ...(config.endpointS3 ? { endpoint: config.endpointS3 } : {}) }),
    ),
    purposes: PurposeRegistry.withOverrides(config.purposes),
    contentHashKey: await resolveContentHashKey(config),
  };
};
