import type { Config } from '../config.js';
import {
  type AdapterClasses,
  buildProviderChains,
  type ProviderChains,
  type TransportDeps,
} from './build.js';
import type { Transport } from './port.js';
import { ResendTransport } from './ResendTransport.js';
import { RestTransport } from './RestTransport.js';
import { SendGridTransport } from './SendGridTransport.js';
import { SesTransport } from './SesTransport.js';
import { SmsV2Transport } from './SmsV2Transport.js';
import { TwilioTransport } from './TwilioTransport.js';

export type { ProviderChains, ProviderSecrets, TransportDeps } from './build.js';
export type { LookupResult, OutboundMessage, SendResult, Transport, TransportCapabilities } from './port.js';
export { ResendTransport } from './ResendTransport.js';
export { RestTransport } from './RestTransport.js';
export { SendGridTransport } from './SendGridTransport.js';
export { SesTransport } from './SesTransport.js';
export { SmsV2Transport } from './SmsV2Transport.js';
export { TwilioTransport } from './TwilioTransport.js';

/**
 * Every adapter class, statically imported: for the CLI and tests, which build chains synchronously. A
 * Lambda function loads only its configured adapters instead (lib/transports/load.ts).
 */
const ALL_ADAPTERS: AdapterClasses = {
  ses: SesTransport,
  resend: ResendTransport,
  sendgrid: SendGridTransport,
  rest: RestTransport,
  smsV2: SmsV2Transport,
  twilio: TwilioTransport,
};

/** The email and SMS primaries (each channel's first provider). Failover lists: `createProviderChains`. */
export const createTransports = (
  config: Config,
  deps: TransportDeps = {},
): { email: Transport; sms: Transport } => {
  const chains = createProviderChains(config, deps);
  return { email: chains.email[0]!, sms: chains.sms[0]! };
};

/** Each channel's providers, in failover order (SENDPROOF_EMAIL_PROVIDERS / SENDPROOF_SMS_PROVIDERS). */
export const createProviderChains = (config: Config, deps: TransportDeps = {}): ProviderChains =>
  buildProviderChains(config, deps, ALL_ADAPTERS);
