import type { PinpointSMSVoiceV2Client } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import { type Clock, systemClock } from '../domain/clock.js';
import { type AwsErrorTable, classifyAwsError, sdkRetrySignals } from './classify.js';
import { labelsFor } from './labels.js';
import type { OutboundMessage, SendResult, Transport, TransportCapabilities } from './port.js';

/**
 * What every End User Messaging SMS (pinpoint-sms-voice-v2) exception means for a claim: each class the
 * SDK exports (those extending PinpointSMSVoiceV2ServiceException; test/unit/transports/sdkErrors.test.ts
 * fails when one is missing), refined by the modeled `Reason` enums (ConflictExceptionReason,
 * ServiceQuotaExceededExceptionReason, ValidationExceptionReason, AccessDeniedExceptionReason).
 */
export const SMS_V2_ERRORS: AwsErrorTable = {
  ThrottlingException: { kind: 'retryable' },
  // Spend limits hold the whole transport (every text would be refused until the limit is raised or the
  // month turns); other quotas: the message was not processed and a later attempt may pass.
  ServiceQuotaExceededException: (e) =>
    /SPEND_LIMIT|DAILY_NOTIFY_TIER_MESSAGE_LIMIT/.test(e.reason ?? '')
      ? { kind: 'retryable', hold: 'spend_limit', holdRetryMs: 3_600_000 }
      : { kind: 'retryable' },
  ValidationException: (e) => {
    if (e.fields.includes('DestinationPhoneNumber')) return { kind: 'rejected', cause: 'recipient' };
    if (/MAXIMUM_SIZE_EXCEEDED|MEDIA_TYPE_NOT_SUPPORTED|ATTACHMENT_TYPE_NOT_SUPPORTED/.test(e.reason ?? ''))
      return { kind: 'rejected', cause: 'content' };
    if (
      /DESTINATION_COUNTRY_BLOCKED|COUNTRY_NOT_ENABLED|INTERNATIONAL_SENDING_NOT_SUPPORTED/.test(
        e.reason ?? '',
      )
    )
      return { kind: 'rejected', cause: 'account' };
    return { kind: 'rejected', cause: 'provider' };
  },
  // The destination opted out (STOP): honoured, never sent through another provider. Sandbox-unverified
  // destinations and our protect configuration's blocks are account decisions, not the provider failing.
  ConflictException: (e) => {
    if (e.reason === 'DESTINATION_PHONE_NUMBER_OPTED_OUT') return { kind: 'rejected', cause: 'opted_out' };
    if (
      e.reason === 'DESTINATION_PHONE_NUMBER_NOT_VERIFIED' ||
      e.reason === 'DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION' ||
      e.reason === 'DESTINATION_PHONE_NUMBER_BLOCKED_BY_PROTECT_NUMBER_OVERRIDE'
    )
      return { kind: 'rejected', cause: 'account' };
    return { kind: 'rejected', cause: 'provider' };
  },
  AccessDeniedException: (e) =>
    e.reason === 'ACCOUNT_DISABLED' || e.reason === 'INSUFFICIENT_ACCOUNT_REPUTATION'
      ? { kind: 'rejected', cause: 'account' }
      : { kind: 'rejected', cause: 'provider' },
  ResourceNotFoundException: { kind: 'rejected', cause: 'provider' },
  InternalServerException: { kind: 'ambiguous' },
};

/** SendTextMessage accepts a TimeToLive of 5..259200 seconds. */
export const TTL_MIN_SECONDS = 5;
export const TTL_MAX_SECONDS = 259_200;

export interface SmsV2TransportOptions {
  /** Built by lib/aws/messagingClients.ts (`smsV2Client`, SDK retries off), or a loader for it. */
  client: PinpointSMSVoiceV2Client | (() => Promise<PinpointSMSVoiceV2Client>);
  originationIdentity?: string;
  configurationSetName?: string;
  /** Abort a call that has not answered in this long; the answer is then ambiguous. Default 10 s. */
  timeoutMs?: number;
  clock?: Clock;
}

/**
 * AWS End User Messaging SMS (pinpoint-sms-voice-v2) SendTextMessage. No idempotency key exists: the
 * dedupe-key hash rides in `Context`, which the service copies onto every delivery event.
 */
export class SmsV2Transport implements Transport {
  readonly name = 'sms-v2';
  readonly channel = 'sms' as const;
  readonly capabilities: TransportCapabilities = {
    idempotencyKey: false,
    keyRetentionSeconds: 0,
    lookupByKey: false,
    lookupByProviderId: false,
    cancel: false,
    pushEvidence: true,
  };
  private readonly clock: Clock;

  private loaded: Promise<PinpointSMSVoiceV2Client> | undefined;

  constructor(private readonly options: SmsV2TransportOptions) {
    this.clock = options.clock ?? systemClock;
  }

  private client(): Promise<PinpointSMSVoiceV2Client> {
    const { client } = this.options;
    this.loaded ??= typeof client === 'function' ? client() : Promise.resolve(client);
    return this.loaded;
  }

  async send(message: OutboundMessage, _idempotencyKey: string): Promise<SendResult> {
    const now = this.clock.now();
    let timeToLive: number | undefined;
    if (message.expiresAtMs !== undefined) {
      const remaining = Math.floor((message.expiresAtMs - now) / 1000);
      // An expired OTP must not go out at all; a nearly expired one gets the shortest TTL AWS allows.
      if (remaining <= 0)
        return { kind: 'rejected', reason: 'message_expired_before_send', code: 'expired', cause: 'content' };
      timeToLive = Math.min(TTL_MAX_SECONDS, Math.max(TTL_MIN_SECONDS, remaining));
    }
    const context = Object.fromEntries(labelsFor(message.label).map((l) => [l.name, l.value]));
    // The SDK loads on the first send, so a function configured for another transport never loads it.
    const [{ SendTextMessageCommand }, client] = await Promise.all([
      import('@aws-sdk/client-pinpoint-sms-voice-v2'),
      this.client(),
    ]);
    const command = new SendTextMessageCommand({
      DestinationPhoneNumber: message.to,
      MessageBody: message.text,
      MessageType: 'TRANSACTIONAL',
      Context: context,
      ...(timeToLive !== undefined ? { TimeToLive: timeToLive } : {}),
      ...(this.options.originationIdentity ? { OriginationIdentity: this.options.originationIdentity } : {}),
      ...(this.options.configurationSetName
        ? { ConfigurationSetName: this.options.configurationSetName }
        : {}),
    });
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.options.timeoutMs ?? 10_000);
    try {
      const output = await client.send(command, { abortSignal: abort.signal });
      if (!output.MessageId) return { kind: 'ambiguous', reason: 'accepted_without_message_id' };
      return { kind: 'accepted', providerMessageId: output.MessageId };
    } catch (error) {
      return classifyAwsError(error, SMS_V2_ERRORS, now, await sdkRetrySignals());
    } finally {
      clearTimeout(timer);
    }
  }
}
