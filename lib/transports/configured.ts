import type { Config } from '../config.js';
import { createProviderChains, type ProviderChains, type ProviderSecrets } from './index.js';
import type { Transport } from './port.js';

/**
 * The configured email and SMS transports, with provider credentials read from the secret at
 * SENDPROOF_PROVIDER_SECRET_ARN (Powertools caches it for five minutes, so a rotated key is picked up
 * without a restart). Used by the dispatcher, the reconciler and the CLI alike.
 */
export const transportsFor = (config: Config): { email: Transport; sms: Transport } => {
  const chains = providerChainsFor(config);
  return { email: chains.email[0]!, sms: chains.sms[0]! };
};

/** Each channel's providers in failover order (the first is `transportsFor`'s), credentials as above. */
export const providerChainsFor = (config: Config): ProviderChains => {
  const arn = config.providerSecretArn;
  return createProviderChains(
    config,
    arn
      ? {
          // Powertools keeps its cache in the module, so a dynamic import still caches for five minutes.
          providerSecrets: async () => {
            const { getSecret } = await import('@aws-lambda-powertools/parameters/secrets');
            return (await getSecret(arn, { maxAge: 300, transform: 'json' })) as ProviderSecrets;
          },
        }
      : {},
  );
};
