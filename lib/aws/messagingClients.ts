import { PinpointSMSVoiceV2Client } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { base, type ClientOptions } from './clientOptions.js';
import { withCommandLog } from './commandLog.js';

/**
 * The SES and SMS clients, apart from lib/aws/clients.ts so that a function whose channels use other
 * transports never loads these SDKs (the transport factory imports this module only when configured).
 * SES and SMS sends are never retried by the SDK: a retry must go through the ledger with the same key.
 */
export const sesClient = (options: ClientOptions): SESv2Client =>
  withCommandLog(new SESv2Client({ ...base(options), maxAttempts: 1 }), options.caller);

export const smsV2Client = (options: ClientOptions): PinpointSMSVoiceV2Client =>
  withCommandLog(new PinpointSMSVoiceV2Client({ ...base(options), maxAttempts: 1 }), options.caller);
