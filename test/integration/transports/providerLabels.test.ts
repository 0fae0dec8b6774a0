import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sesClient, smsV2Client } from '../../../lib/aws/messagingClients.js';
import { IdentifierSchema, IntentSchemaV1 } from '../../../lib/domain/intent.js';
import { deriveDedupeKey, type MessageIdentity } from '../../../lib/domain/keys.js';
import { labelKeyOf, openLabel, sealLabel } from '../../../lib/transports/labels.js';
import type { OutboundMessage, Transport } from '../../../lib/transports/port.js';
import { ResendTransport } from '../../../lib/transports/ResendTransport.js';
import { SendGridTransport } from '../../../lib/transports/SendGridTransport.js';
import { SesTransport } from '../../../lib/transports/SesTransport.js';
import { SmsV2Transport } from '../../../lib/transports/SmsV2Transport.js';
import { TwilioTransport } from '../../../lib/transports/TwilioTransport.js';
import {
  type RecordedRequest,
  type Responder,
  ScriptedHttpServer,
} from '../../support/fakes/ScriptedHttpServer.js';

/**
 * What each provider documents it accepts in the metadata Sendproof attaches to a message, checked
 * against the requests the real adapters build, for arbitrary valid identities:
 *
 * - SES v2 `EmailTags` (MessageTag): "It can only contain ASCII letters (a–z, A–Z), numbers (0–9),
 *   underscores (_), or dashes (-). It can contain no more than 256 characters", for Name and Value alike.
 *   https://docs.aws.amazon.com/ses/latest/APIReference-V2/API_MessageTag.html
 * - End User Messaging SMS `SendTextMessage` `Context`: a string-to-string map logged to the event
 *   destination; the API reference bounds it (Map Entries at most 5; Key 1–100 characters, Value 1–800
 *   characters, no whitespace). https://docs.aws.amazon.com/sms-voice/latest/APIReference/API_SendTextMessage.html
 * - Resend tags: "Tags can include ASCII letters, numbers, underscores, or dashes", name and value each
 *   at most 256 characters. https://resend.com/docs/dashboard/emails/tags and
 *   https://resend.com/docs/api-reference/emails/send-email
 * - SendGrid v3 Mail Send: "The total length of custom arguments must be less than 10000 bytes."
 *   https://docs.sendgrid.com/api-reference/mail-send/limitations
 * - Twilio `StatusCallback`: error 21609 "Invalid 'StatusCallback'" when "the URL exceeds the
 *   4000-character limit". https://www.twilio.com/docs/api/errors/21609
 *
 * And what none of them may receive: a readable identifier (issue 26 item 4). The label is sealed
 * (lib/transports/labels.ts), so no tenant, purpose, event id, recipient ref, template revision or
 * decision id appears anywhere in a request, and the label opens to the row's key under our secret only.
 */
const SES_TAG = /^[A-Za-z0-9_-]{1,256}$/;
const SMS_CONTEXT_KEY = /^\S{1,100}$/;
const SMS_CONTEXT_VALUE = /^\S{1,800}$/;
const RESEND_TAG = /^[A-Za-z0-9_-]{1,256}$/;
const SENDGRID_CUSTOM_ARGS_MAX_BYTES = 10_000;
const TWILIO_CALLBACK_MAX = 4000;

const TWILIO_SID = 'AC00000000000000000000000000000000';
/** A Lambda Function URL as long as AWS makes them, which is where Twilio's callbacks go. */
const CALLBACK_BASE =
  'https://abcdefghijklmnopqrstuvwxyz234567.lambda-url.ap-southeast-2.on.aws/twilio?deployment=prod';

const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  reply: status,
  headers,
  body,
});
const answer: Responder = (req) => {
  if (req.headers['x-amz-target'] === 'PinpointSMSVoiceV2.SendTextMessage')
    return reply(200, { MessageId: randomUUID() }, { 'content-type': 'application/x-amz-json-1.0' });
  if (req.path === '/v2/email/outbound-emails') return reply(200, { MessageId: randomUUID() });
  if (req.path === '/emails') return reply(200, { id: randomUUID() });
  if (req.path === '/v3/mail/send') return reply(202, undefined, { 'x-message-id': randomUUID() });
  if (req.path === `/2010-04-01/Accounts/${TWILIO_SID}/Messages.json`)
    return reply(201, { sid: `SM${'0'.repeat(32)}`, status: 'queued' });
  return reply(404, {});
};

/** Identifiers as the intent boundary accepts them: every key component at its alphabet and bounds. */
const identifier = (max = 128) => fc.stringMatching(new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${max - 1}}$`));
const identity = fc.record({
  tenant: identifier(),
  purpose: identifier(48),
  eventId: identifier(),
  recipientRef: identifier(),
  templateRevision: fc.option(fc.stringMatching(/^[A-Za-z0-9._-]{1,32}$/), { nil: undefined }),
  resendDecisionId: fc.option(identifier(), { nil: undefined }),
});

describe('provider metadata: every label the adapters build is one the provider accepts', () => {
  let fake: ScriptedHttpServer;
  let adapters: Array<{ name: string; channel: 'email' | 'sms'; transport: Transport }>;
  const key = labelKeyOf('provider-labels-test-secret-0123456789');

  beforeAll(async () => {
    fake = await ScriptedHttpServer.start(answer);
    const timeouts = { responseTimeoutMs: 2000 };
    adapters = [
      {
        name: 'ses',
        channel: 'email',
        transport: new SesTransport({
          client: sesClient({ region: 'us-east-1', endpoint: fake.url }),
          from: 'receipts@sendproof.test',
          configurationSetName: 'sendproof-events',
        }),
      },
      {
        name: 'sms-v2',
        channel: 'sms',
        transport: new SmsV2Transport({
          client: smsV2Client({ region: 'us-east-1', endpoint: fake.url }),
          configurationSetName: 'sendproof-sms-events',
        }),
      },
      {
        name: 'resend',
        channel: 'email',
        transport: new ResendTransport({
          baseUrl: fake.url,
          from: 'Receipts <receipts@sendproof.test>',
          apiKey: async () => 're_test_key',
          timeouts,
        }),
      },
      {
        name: 'sendgrid',
        channel: 'email',
        transport: new SendGridTransport({
          baseUrl: fake.url,
          from: 'receipts@sendproof.test',
          apiKey: async () => 'SG.test-key',
          timeouts,
        }),
      },
      {
        name: 'twilio',
        channel: 'sms',
        transport: new TwilioTransport({
          baseUrl: fake.url,
          from: '+15555550100',
          credentials: async () => ({ accountSid: TWILIO_SID, authToken: 'token-1' }),
          statusCallbackUrl: CALLBACK_BASE,
          timeouts,
        }),
      },
    ];
  });
  afterAll(async () => {
    await fake.stop();
  });

  /** The metadata a provider keeps and shows, from the request the adapter sent. */
  const metadataOf = (name: string, req: RecordedRequest): string[] => {
    if (name === 'twilio') {
      const callback = new URLSearchParams(req.body).get('StatusCallback') ?? '';
      expect(callback.length).toBeLessThanOrEqual(TWILIO_CALLBACK_MAX);
      expect(new URL(callback).hostname).not.toContain('_');
      return [...new URL(callback).searchParams.values()];
    }
    const body = JSON.parse(req.body) as Record<string, unknown>;
    if (name === 'ses') {
      const tags = body.EmailTags as Array<{ Name: string; Value: string }>;
      for (const t of tags) expect([t.Name, t.Value].every((v) => SES_TAG.test(v))).toBe(true);
      return tags.map((t) => t.Value);
    }
    if (name === 'sms-v2') {
      const context = body.Context as Record<string, string>;
      expect(Object.keys(context).length).toBeLessThanOrEqual(5);
      for (const [k, v] of Object.entries(context)) {
        expect(SMS_CONTEXT_KEY.test(k)).toBe(true);
        expect(SMS_CONTEXT_VALUE.test(v)).toBe(true);
      }
      return Object.values(context);
    }
    if (name === 'resend') {
      const tags = body.tags as Array<{ name: string; value: string }>;
      expect(tags.length).toBeLessThanOrEqual(75);
      for (const t of tags) expect([t.name, t.value].every((v) => RESEND_TAG.test(v))).toBe(true);
      return tags.map((t) => t.value);
    }
    const args = body.custom_args as Record<string, string>;
    expect(Buffer.byteLength(JSON.stringify(args), 'utf8')).toBeLessThan(SENDGRID_CUSTOM_ARGS_MAX_BYTES);
    return Object.values(args);
  };

  it('SES tags, SMS Context, Resend tags, SendGrid custom_args and the Twilio callback URL, for any valid identity', async () => {
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(identity, fc.constantFrom('email', 'sms' as const), async (raw, channel) => {
        // Prepare: the identity passed the boundary (the intent's own schema for every component)
        const id: MessageIdentity = {
          tenant: raw.tenant,
          purpose: raw.purpose,
          eventId: raw.eventId,
          recipientRef: raw.recipientRef,
          channel,
          ...(raw.templateRevision !== undefined ? { templateRevision: raw.templateRevision } : {}),
          ...(raw.resendDecisionId !== undefined ? { resendDecisionId: raw.resendDecisionId } : {}),
        };
        for (const part of [raw.tenant, raw.eventId, raw.recipientRef])
          expect(IdentifierSchema.safeParse(part).success).toBe(true);
        expect(IntentSchemaV1.shape.purpose.safeParse(raw.purpose).success).toBe(true);
        const dedupe = deriveDedupeKey(id);
        const readable = [raw.tenant, raw.purpose, raw.eventId, raw.recipientRef, raw.resendDecisionId]
          .filter((v): v is string => v !== undefined && v.length >= 8)
          .concat(dedupe.readable);
        for (const adapter of adapters.filter((a) => a.channel === channel)) {
          const message: OutboundMessage = {
            channel,
            to: channel === 'email' ? 'ada@example.com' : '+15555550123',
            ...(channel === 'email' ? { subject: 'Your receipt' } : {}),
            text: 'Your message',
            dedupeKey: dedupe.readable,
            label: sealLabel(key, dedupe.readable),
          };
          // Act
          const result = await adapter.transport.send(message, dedupe.hash);
          // Assess: accepted, within the provider's documented limits, and nothing readable in it
          expect(result.kind, adapter.name).toBe('accepted');
          const req = fake.requests.at(-1)!;
          const values = metadataOf(adapter.name, req);
          expect(values.map((v) => openLabel(key, v)?.idempotencyKey).filter(Boolean)).toEqual([dedupe.hash]);
          for (const identifierText of readable) expect(req.body).not.toContain(identifierText);
          checked += 1;
        }
      }),
      { numRuns: 60 },
    );
    expect(checked).toBeGreaterThanOrEqual(120);
  });

  it('a tenant such as clinic.example, an event id at its limit and a long ref still make an accepted label', async () => {
    // Prepare: the SES case issue 25 names (`.` in a tenant), at the identifiers' limits
    const id: MessageIdentity = {
      tenant: 'clinic.example',
      purpose: 'health-report',
      eventId: `e${'x'.repeat(127)}`,
      recipientRef: `r${'y'.repeat(127)}`,
      channel: 'email',
      resendDecisionId: `d${'z'.repeat(127)}`,
    };
    const dedupe = deriveDedupeKey(id);
    const ses = adapters.find((a) => a.name === 'ses')!.transport;
    // Act
    const result = await ses.send(
      {
        channel: 'email',
        to: 'ada@example.com',
        subject: 's',
        text: 't',
        dedupeKey: dedupe.readable,
        label: sealLabel(key, dedupe.readable),
      },
      dedupe.hash,
    );
    // Assess
    expect(result.kind).toBe('accepted');
    const tags = (
      JSON.parse(fake.requests.at(-1)!.body) as { EmailTags: Array<{ Name: string; Value: string }> }
    ).EmailTags;
    expect(tags.every((t) => SES_TAG.test(t.Name) && SES_TAG.test(t.Value))).toBe(true);
    expect(JSON.stringify(tags)).not.toContain('clinic');
    expect(openLabel(key, tags[0]!.Value)).toEqual({ idempotencyKey: dedupe.hash });
  });
});
