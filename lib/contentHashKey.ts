import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import type { Config } from './config.js';
import { ConfigurationError } from './domain/errors.js';

/**
 * The HMAC key of content hashes and of an SMS number's suppression ref (lib/ledger/optOut.ts): the
 * dispatcher hashes with it, and the evidence functions need the same key to find a number an inbound
 * STOP names.
 */

/** A fixed key for laptops and tests only: a deployed stack always reads its key from Secrets Manager. */
const LOCAL_CONTENT_HASH_KEY = 'sendproof-local-content-hash-key-not-for-production';

export const resolveContentHashKey = async (config: Config): Promise<string> => {
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
