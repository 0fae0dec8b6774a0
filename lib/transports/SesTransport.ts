import type { SESv2Client } from '@aws-sdk/client-sesv2';
import { type Clock, systemClock } from '../domain/clock.js';
import { type AwsErrorTable, classifyAwsError } from './classify.js';
import { labelsFor, sesTagValue } from './labels.js';
import type { OutboundMessage, SendResult, Transport, TransportCapabilities } from './port.js';

/** SendEmail exceptions (SES API v2 reference) and what each means for a claim. */
const SES_ERRORS: AwsErrorTable = {
  TooManyRequestsException: 'retryable',
  LimitExceededException: 'retryable',
  MessageRejected: 'rejected',
  AccountSuspendedException: 'rejected',
  SendingPausedException: 'rejected',
  MailFromDomainNotVerifiedException: 'rejected',
  NotFoundException: 'rejected',
  BadRequestException: 'rejected',
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

  async send(message: OutboundMessage, idempotencyKey: string): Promise<SendResult> {
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
      EmailTags: labelsFor(idempotencyKey, message.tags, sesTagValue, message.dedupeKey).map((l) => ({
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
      return classifyAwsError(error, SES_ERRORS, this.clock.now());
    } finally {
      clearTimeout(timer);
    }
  }
}
