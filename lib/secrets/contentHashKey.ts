import type { Config } from '../config.js';
import { ConfigurationError } from '../domain/errors.js';

/** A fixed key for laptops and tests only: a deployed stack always reads its key from Secrets Manager. */
export const LOCAL_CONTENT_HASH_KEY = 'sendproof-local-content-hash-key-not-for-production';

/**
 * The deployment's HMAC secret (Secrets Manager in AWS, cached an hour by Powertools; a configured or
 * fixed local value otherwise). The dispatcher keys content hashes with it; provider labels are sealed
 * and opened with keys derived from it (lib/transports/labels.ts labelKeyOf), so the dispatcher, the
 * evidence and webhook functions and the reconciler's pull all read this one secret.
 */
export const resolveContentHashKey = async (config: Config): Promise<string> => {
  if (config.contentHashSecretArn) {
    // Loaded only when a secret is configured (the Secrets Manager client stays off a local module path).
    const { getSecret } = await import('@aws-lambda-powertools/parameters/secrets');
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
