import type { Config } from '../config.js';
import { createProviderChains, type ProviderChains } from './index.js';
import { providerDepsFor } from './load.js';
import type { Transport } from './port.js';

/**
 * The configured email and SMS transports, with provider credentials read from the secret at
 * SENDPROOF_PROVIDER_SECRET_ARN (Powertools caches it for five minutes, so a rotated key is picked up
 * without a restart). Used by the CLI; the Lambda functions load only their adapters (`loadProviderChainsFor`).
 */
export const transportsFor = (config: Config): { email: Transport; sms: Transport } => {
  const chains = providerChainsFor(config);
  return { email: chains.email[0]!, sms: chains.sms[0]! };
};

/** Each channel's providers in failover order (the first is `transportsFor`'s), credentials as above. */
export const providerChainsFor = (config: Config): ProviderChains =>
  createProviderChains(config, providerDepsFor(config));
