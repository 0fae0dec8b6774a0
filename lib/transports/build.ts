import type { PinpointSMSVoiceV2Client } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import type { SESv2Client } from '@aws-sdk/client-sesv2';
import { clientOptionsFor } from '../aws/clientOptions.js';
import { type Config, providersOf } from '../config.js';
import type { Clock } from '../domain/clock.js';
import { ConfigurationError, SendproofError } from '../domain/errors.js';
import type { ExchangeTimeouts } from './HttpExchange.js';
import type { Transport } from './port.js';
import type { ResendTransport } from './ResendTransport.js';
import type { RestTransport } from './RestTransport.js';
import type { SendGridTransport } from './SendGridTransport.js';
import type { SesTransport } from './SesTransport.js';
import type { SmsV2Transport } from './SmsV2Transport.js';
import type { TwilioTransport } from './TwilioTransport.js';

/**
 * The adapter classes, imported here as types only: this module holds the construction logic and no
 * adapter code, so a function that builds its chains through lib/transports/load.ts loads only the
 * adapters its configuration names (issue 27: nothing on the module path the configured channels do not use).
 */
export interface AdapterClasses {
  ses: typeof SesTransport;
  resend: typeof ResendTransport;
  sendgrid: typeof SendGridTransport;
  rest: typeof RestTransport;
  smsV2: typeof SmsV2Transport;
  twilio: typeof TwilioTransport;
}
export type AdapterClass = keyof AdapterClasses;

/** The class each transport name is built with (`simulator` is the REST convention without credentials). */
const EMAIL_ADAPTER: Record<Config['emailTransport'], AdapterClass> = {
  ses: 'ses',
  resend: 'resend',
  sendgrid: 'sendgrid',
  simulator: 'rest',
  rest: 'rest',
};
const SMS_ADAPTER: Record<Config['smsTransport'], AdapterClass> = {
  'sms-v2': 'smsV2',
  twilio: 'twilio',
  simulator: 'rest',
  rest: 'rest',
};

/** The adapter classes the configured providers of both channels are built with, each once. */
export const adapterClassesOf = (config: Config): AdapterClass[] => [
  ...new Set([
    ...providersOf(config, 'email').map((name) => EMAIL_ADAPTER[name]),
    ...providersOf(config, 'sms').map((name) => SMS_ADAPTER[name]),
  ]),
];

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

/** Each channel's providers, in failover order (SENDPROOF_EMAIL_PROVIDERS / SENDPROOF_SMS_PROVIDERS). */
export interface ProviderChains {
  email: readonly Transport[];
  sms: readonly Transport[];
}

/**
 * Picks the email and SMS adapters named in config. `simulator` is the REST adapter aimed at the simulator.
 * The one place config becomes adapters: `createProviderChains` (lib/transports/index.ts) passes every
 * adapter class, `loadProviderChains` (lib/transports/load.ts) only those `adapterClassesOf` names. A class
 * the configuration needs but `adapters` lacks is a wiring bug, not a configuration error.
 */
export const buildProviderChains = (
  config: Config,
  deps: TransportDeps,
  adapters: Partial<AdapterClasses>,
): ProviderChains => {
  const adapter = <K extends AdapterClass>(key: K): AdapterClasses[K] => {
    const found = adapters[key];
    if (!found)
      throw new SendproofError(
        'permanent',
        'wiring',
        `adapter ${key} was not loaded (lib/transports/load.ts)`,
      );
    return found;
  };
  const common = {
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.timeouts ? { timeouts: deps.timeouts } : {}),
  };
  // The simulator is the generic REST convention without credentials; a real REST provider gets the key.
  const rest = (channel: 'email' | 'sms', kind: 'simulator' | 'rest'): Transport =>
    new (adapter('rest'))({
      ...common,
      channel,
      baseUrl: restBase(config, kind),
      keyRetentionSeconds: config.restKeyRetentionSeconds,
      ...(kind === 'rest' ? restApiKey(deps) : {}),
    });
  const email = (name: Config['emailTransport']): Transport => {
    switch (name) {
      case 'ses':
        return new (adapter('ses'))({
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
        return new (adapter('resend'))({
          ...common,
          from: config.emailFrom,
          apiKey: secretField(deps, 'resendApiKey', 'resend'),
          ...(deps.resendBaseUrl ? { baseUrl: deps.resendBaseUrl } : {}),
        });
      case 'sendgrid':
        return new (adapter('sendgrid'))({
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
        return new (adapter('smsV2'))({
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
        return new (adapter('twilio'))({
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
