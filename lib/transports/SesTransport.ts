import { type SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
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
  /** Built by lib/aws/clients.ts (`sesClient`), which turns SDK retries off. */
  client: SESv2Client;
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

  constructor(private readonly options: SesTransportOptions) {
    this.clock = options.clock ?? systemClock;
  }

  async send(message: OutboundMessage, idempotencyKey: string): Promise<SendResult> {
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
      const output = await this.options.client.send(command, { abortSignal: abort.signal });
      if (!output.MessageId) return { kind: 'ambiguous', reason: 'accepted_without_message_id' };
      return { kind: 'accepted', providerMessageId: output.MessageId };
    } catch (error) {
      return classifyAwsError(error, SES_ERRORS, this.clock.now());
    } finally {
      clearTimeout(timer);
    }
  }
}
