import type { PinpointSMSVoiceV2Client } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import type { SESv2Client } from '@aws-sdk/client-sesv2';
import { clientOptionsFor } from '../aws/clientOptions.js';
import { type Config, providersOf } from '../config.js';
import type { Clock } from '../domain/clock.js';
import { ConfigurationError } from '../domain/errors.js';
import type { ExchangeTimeouts } from './HttpExchange.js';
import type { Transport } from './port.js';
import { ResendTransport } from './ResendTransport.js';
import { RestTransport } from './RestTransport.js';
import { SendGridTransport } from './SendGridTransport.js';
import { SesTransport } from './SesTransport.js';
import { SmsV2Transport } from './SmsV2Transport.js';
import { TwilioTransport } from './TwilioTransport.js';

export type { LookupResult, OutboundMessage, SendResult, Transport, TransportCapabilities } from './port.js';
export { ResendTransport } from './ResendTransport.js';
export { RestTransport } from './RestTransport.js';
export { SendGridTransport } from './SendGridTransport.js';
export { SesTransport } from './SesTransport.js';
export { SmsV2Transport } from './SmsV2Transport.js';
export { TwilioTransport } from './TwilioTransport.js';

/**
 * Provider credentials, as stored in the secret at SENDPROOF_PROVIDER_SECRET_ARN (one JSON object).
 * Only the fields of the configured providers need to be present.
 */
export interface ProviderSecrets {
  resendApiKey?: string;
  sendgridApiKey?: string;
  twilioAccountSid?: string;
  twilioAuthToken?: string;
  /** Bearer token for a real provider behind the generic REST convention (not needed by the simulator). */
  restApiKey?: string;
}

export interface TransportDeps {
  /**
   * Fetches the provider secret (the caller reads Secrets Manager, e.g. with Powertools parameters, and
   * caches it). Called on every send, so a rotated key is picked up without a restart.
   */
  providerSecrets?: () => Promise<ProviderSecrets>;
  clock?: Clock;
  /** Defaults: built by lib/aws/clients.ts from config.region and the local endpoints. */
  sesClient?: SESv2Client;
  smsClient?: PinpointSMSVoiceV2Client;
  /** Overrides for tests and regional endpoints. */
  resendBaseUrl?: string;
  sendgridBaseUrl?: string;
  twilioBaseUrl?: string;
  timeouts?: ExchangeTimeouts;
}

const secretField = (
  deps: TransportDeps,
  field: keyof ProviderSecrets,
  transport: string,
): (() => Promise<string>) => {
  const resolve = deps.providerSecrets;
  if (!resolve)
    throw new ConfigurationError(
      `transport ${transport} needs provider credentials: pass deps.providerSecrets (secret at SENDPROOF_PROVIDER_SECRET_ARN)`,
    );
  return async () => {
    const value = (await resolve())[field];
    if (!value) throw new ConfigurationError(`provider secret has no ${field} (needed by ${transport})`);
    return value;
  };
};

/** The generic REST provider may or may not want a bearer token; send one only when the secret has it. */
const restApiKey = (deps: TransportDeps): { apiKey?: () => Promise<string> } => {
  const resolve = deps.providerSecrets;
  return resolve ? { apiKey: async () => (await resolve()).restApiKey ?? '' } : {};
};

const restBase = (config: Config, transport: string): string => {
  if (!config.restBaseUrl)
    throw new ConfigurationError(`transport ${transport} needs SENDPROOF_REST_BASE_URL`);
  return config.restBaseUrl;
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
export interface ProviderChains {
  email: readonly Transport[];
  sms: readonly Transport[];
}

/** Picks the email and SMS adapters named in config. `simulator` is the REST adapter aimed at the simulator. */
export const createProviderChains = (config: Config, deps: TransportDeps = {}): ProviderChains => {
  const common = {
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.timeouts ? { timeouts: deps.timeouts } : {}),
  };
  // The simulator is the generic REST convention without credentials; a real REST provider gets the key.
  const rest = (channel: 'email' | 'sms', kind: 'simulator' | 'rest'): Transport =>
    new RestTransport({
      ...common,
      channel,
      baseUrl: restBase(config, kind),
      keyRetentionSeconds: config.restKeyRetentionSeconds,
      ...(kind === 'rest' ? restApiKey(deps) : {}),
    });
  const email = (name: Config['emailTransport']): Transport => {
    switch (name) {
      case 'ses':
        return new SesTransport({
          // Loaded only because SES is configured (lib/aws/messagingClients.ts), on the first send.
          client:
            deps.sesClient ??
            (async () =>
              (await import('../aws/messagingClients.js')).sesClient(
                clientOptionsFor(config, 'endpointSes'),
              )),
          from: config.emailFrom,
          ...(config.sesConfigurationSet ? { configurationSetName: config.sesConfigurationSet } : {}),
          ...(deps.clock ? { clock: deps.clock } : {}),
        });
      case 'resend':
        return new ResendTransport({
          ...common,
          from: config.emailFrom,
          apiKey: secretField(deps, 'resendApiKey', 'resend'),
          ...(deps.resendBaseUrl ? { baseUrl: deps.resendBaseUrl } : {}),
        });
      case 'sendgrid':
        return new SendGridTransport({
          ...common,
          from: config.emailFrom,
          apiKey: secretField(deps, 'sendgridApiKey', 'sendgrid'),
          ...(deps.sendgridBaseUrl ? { baseUrl: deps.sendgridBaseUrl } : {}),
        });
      case 'simulator':
      case 'rest':
        return rest('email', name);
    }
  };
  const sms = (name: Config['smsTransport']): Transport => {
    switch (name) {
      case 'sms-v2':
        return new SmsV2Transport({
          client:
            deps.smsClient ??
            (async () =>
              (await import('../aws/messagingClients.js')).smsV2Client(
                clientOptionsFor(config, 'endpointSmsV2'),
              )),
          ...(config.smsOriginationIdentity ? { originationIdentity: config.smsOriginationIdentity } : {}),
          ...(config.smsConfigurationSet ? { configurationSetName: config.smsConfigurationSet } : {}),
          ...(deps.clock ? { clock: deps.clock } : {}),
        });
      case 'twilio': {
        if (!config.smsOriginationIdentity)
          throw new ConfigurationError(
            'transport twilio needs SENDPROOF_SMS_ORIGINATION_IDENTITY (a sender number or MG… service SID)',
          );
        const sid = secretField(deps, 'twilioAccountSid', 'twilio');
        const token = secretField(deps, 'twilioAuthToken', 'twilio');
        return new TwilioTransport({
          ...common,
          from: config.smsOriginationIdentity,
          credentials: async () => ({ accountSid: await sid(), authToken: await token() }),
          ...(deps.twilioBaseUrl ? { baseUrl: deps.twilioBaseUrl } : {}),
          ...(config.twilioStatusCallbackUrl ? { statusCallbackUrl: config.twilioStatusCallbackUrl } : {}),
        });
      }
      case 'simulator':
      case 'rest':
        return rest('sms', name);
    }
  };
  return { email: providersOf(config, 'email').map(email), sms: providersOf(config, 'sms').map(sms) };
};
