import type { Config } from '../config.js';
import {
  type AdapterClass,
  type AdapterClasses,
  adapterClassesOf,
  buildProviderChains,
  type ProviderChains,
  type ProviderSecrets,
  type TransportDeps,
} from './build.js';

/**
 * Each adapter's module, imported on demand: a bundle puts each in its own chunk, so a function's cold
 * start reads only the adapters its configuration names (issue 27), not all six.
 */
const ADAPTER_MODULES: { [K in AdapterClass]: () => Promise<AdapterClasses[K]> } = {
  ses: async () => (await import('./SesTransport.js')).SesTransport,
  resend: async () => (await import('./ResendTransport.js')).ResendTransport,
  sendgrid: async () => (await import('./SendGridTransport.js')).SendGridTransport,
  rest: async () => (await import('./RestTransport.js')).RestTransport,
  smsV2: async () => (await import('./SmsV2Transport.js')).SmsV2Transport,
  twilio: async () => (await import('./TwilioTransport.js')).TwilioTransport,
};

/**
 * `createProviderChains` (lib/transports/index.ts) for a Lambda function's init: the same adapters, the
 * same configuration errors (thrown by the same `buildProviderChains`, after the modules load), but only
 * the configured adapters' modules are imported.
 */
export const loadProviderChains = async (
  config: Config,
  deps: TransportDeps = {},
): Promise<ProviderChains> => {
  const loaded = await Promise.all(
    adapterClassesOf(config).map(async (key) => [key, await ADAPTER_MODULES[key]()] as const),
  );
  return buildProviderChains(config, deps, Object.fromEntries(loaded) as Partial<AdapterClasses>);
};

/**
 * The provider credentials of every function and CLI command: the secret at SENDPROOF_PROVIDER_SECRET_ARN,
 * read with Powertools (cached for five minutes, so a rotated key is picked up without a restart). Here,
 * not in lib/transports/configured.ts, because that module imports every adapter for the synchronous CLI.
 */
export const providerDepsFor = (config: Config): TransportDeps => {
  const arn = config.providerSecretArn;
  return arn
    ? {
        // Powertools keeps its cache in the module, so a dynamic import still caches for five minutes.
        providerSecrets: async () => {
          const { getSecret } = await import('@aws-lambda-powertools/parameters/secrets');
          return (await getSecret(arn, { maxAge: 300, transform: 'json' })) as ProviderSecrets;
        },
      }
    : {};
};

/**
 * `providerChainsFor` (lib/transports/configured.ts) for a Lambda function's init: the same chains and
 * credentials, with only the configured adapters loaded.
 */
export const loadProviderChainsFor = (config: Config): Promise<ProviderChains> =>
  loadProviderChains(config, providerDepsFor(config));
