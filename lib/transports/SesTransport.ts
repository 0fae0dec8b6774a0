import type { SESv2Client } from '@aws-sdk/client-sesv2';
import { type Clock, systemClock } from '../domain/clock.js';
import { type AwsErrorTable, classifyAwsError, sdkRetrySignals } from './classify.js';
import { labelsFor } from './labels.js';
import type { OutboundMessage, SendResult, Transport, TransportCapabilities } from './port.js';

/**
 * What every SES v2 exception means for a claim: each class `@aws-sdk/client-sesv2` exports (those extending
 * SESv2ServiceException; test/unit/transports/sdkErrors.test.ts fails when one is missing), plus the
 * documented ThrottlingException, which the SDK does not model. Sources: the SendEmail "Errors" of the SES
 * API v2 reference (the SDK's SendEmailCommand docs) and the developer guide's "Errors related to the
 * sending quotas" (ThrottlingException, HTTP 400, "Maximum sending rate exceeded" / "Daily message quota
 * exceeded"). The exceptions SendEmail never throws get the meaning their description gives.
 */
export const SES_ERRORS: AwsErrorTable = {
  TooManyRequestsException: { kind: 'retryable' },
  // "There are too many instances of the specified resource type": throttling by the SDK's own rules too.
  LimitExceededException: { kind: 'retryable' },
  // A daily quota holds the whole transport until it resets; a rate throttle is one row's retry.
  ThrottlingException: (e) =>
    /daily message quota/i.test(e.message)
      ? { kind: 'retryable', hold: 'daily_quota' }
      : { kind: 'retryable' },
  // "The account's ability to send email is currently paused" (account or configuration set): a pause
  // can be lifted, so the transport waits; it never rejects the rows one by one.
  SendingPausedException: { kind: 'retryable', hold: 'sending_paused' },
  // "The message can't be sent because it contains invalid content", or an identity SES has not verified
  // (sender, or recipient in the sandbox): the latter is our configuration at SES, not the message.
  MessageRejected: (e) =>
    /not verified/i.test(e.message)
      ? { kind: 'rejected', cause: 'provider' }
      : { kind: 'rejected', cause: 'content' },
  // "permanently restricted": no retry budget outlasts it, and it is the account, not the message.
  AccountSuspendedException: { kind: 'rejected', cause: 'account' },
  MailFromDomainNotVerifiedException: { kind: 'rejected', cause: 'provider' },
  // A configuration set (or identity) that does not exist: our configuration.
  NotFoundException: { kind: 'rejected', cause: 'provider' },
  BadRequestException: { kind: 'rejected', cause: 'provider' },
  // Not thrown by SendEmail; classified by their description so a new use cannot fall to a default.
  AlreadyExistsException: { kind: 'rejected', cause: 'provider' },
  ConflictException: { kind: 'rejected', cause: 'provider' },
  InvalidNextTokenException: { kind: 'rejected', cause: 'provider' },
  ConcurrentModificationException: { kind: 'ambiguous' },
  InternalServiceErrorException: { kind: 'ambiguous' },
};

export interface SesTransportOptions {
  /** Built by lib/aws/messagingClients.ts (`sesClient`, SDK retries off), or a loader for it. */
  client: SESv2Client | (() => Promise<SESv2Client>);
  from: string;
  /** Configuration set whose event destination feeds the evidence recorder. */
  configurationSetName?: string;
  /** Abort a call that has not answered in this long; the answer is then ambiguous. Default 10 s. */
  timeoutMs?: number;
  clock?: Clock;
}

/**
 * Amazon SES v2 SendEmail. SES has no idempotency key, so the dedupe-key hash rides in EmailTags
 * (`sendproof-key`), where configuration-set events carry it back to the evidence recorder.
 */
export class SesTransport implements Transport {
  readonly name = 'ses';
  readonly channel = 'email' as const;
  readonly capabilities: TransportCapabilities = {
    idempotencyKey: false,
    keyRetentionSeconds: 0,
    lookupByKey: false,
    lookupByProviderId: false,
    cancel: false,
    pushEvidence: true,
  };
  private readonly clock: Clock;

  private loaded: Promise<SESv2Client> | undefined;

  constructor(private readonly options: SesTransportOptions) {
    this.clock = options.clock ?? systemClock;
  }

  private client(): Promise<SESv2Client> {
    const { client } = this.options;
    this.loaded ??= typeof client === 'function' ? client() : Promise.resolve(client);
    return this.loaded;
  }

  async send(message: OutboundMessage, _idempotencyKey: string): Promise<SendResult> {
    // The SDK loads on the first send, so a function configured for another transport never loads it.
    const [{ SendEmailCommand }, client] = await Promise.all([
      import('@aws-sdk/client-sesv2'),
      this.client(),
    ]);
    const command = new SendEmailCommand({
      FromEmailAddress: this.options.from,
      Destination: { ToAddresses: [message.to] },
      Content: {
        Simple: {
          Subject: { Data: message.subject ?? '', Charset: 'UTF-8' },
          Body: {
            Text: { Data: message.text, Charset: 'UTF-8' },
            ...(message.html !== undefined ? { Html: { Data: message.html, Charset: 'UTF-8' } } : {}),
          },
          ...(message.attachments?.length
            ? {
                Attachments: message.attachments.map((a) => ({
                  FileName: a.filename,
                  ContentType: a.contentType,
                  RawContent: a.content,
                  ContentDisposition: 'ATTACHMENT' as const,
                  ContentTransferEncoding: 'BASE64' as const,
                })),
              }
            : {}),
        },
      },
      EmailTags: labelsFor(message.label).map((l) => ({
        Name: l.name,
        Value: l.value,
      })),
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
      return classifyAwsError(error, SES_ERRORS, this.clock.now(), await sdkRetrySignals());
    } finally {
      clearTimeout(timer);
    }
  }
}
