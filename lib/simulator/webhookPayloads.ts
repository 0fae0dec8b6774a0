import { KEY_TAG } from '../transports/labels.js';

/**
 * TEST DOUBLE. The webhook bodies the provider simulator pushes, shaped as Resend, SendGrid and Twilio
 * document theirs: test/unit/simulator/fakesHeldToCorpus.test.ts compares each with the documented example
 * of the same type (test/contract/providers), field path by field path and type by type. Addresses are
 * fixed placeholders, never the message's recipient; only the label and the ids are real.
 */
export const SIM_FROM = 'Sendproof Simulator <simulator@sendproof.test>';
export const SIM_TO = 'recipient@sendproof.test';
export const SIM_ACCOUNT_SID = 'AC00000000000000000000000000000000';
export const SIM_SMS_FROM = '+15005550006';
export const SIM_SMS_TO = '+15005550010';

/** One simulated event, as the simulator's feed holds it (ProviderSimulator.ts `SimEvent`, without `seq`). */
export interface SimulatedEvent {
  id: string;
  type: 'sent' | 'delivered' | 'bounced' | 'complained' | 'failed' | 'expired' | 'unknown';
  messageId: string;
  idempotencyKey: string | null;
  channel: 'email' | 'sms';
  /** ISO 8601: when it happened. */
  at: string;
  bounceType?: 'Permanent' | 'Transient';
  tags?: Record<string, string>;
}
type Event = SimulatedEvent;

const RESEND_TYPES: Readonly<Record<string, string>> = {
  sent: 'email.sent',
  delivered: 'email.delivered',
  bounced: 'email.bounced',
  complained: 'email.complained',
};

/** Resend: `{ type, created_at, data }` (the documented examples send `tags` as an object). */
export const resendWebhookPayload = (event: Event): Record<string, unknown> | undefined => {
  const type = RESEND_TYPES[event.type];
  const label = event.tags?.[KEY_TAG];
  if (!type || !label) return undefined;
  return {
    type,
    created_at: event.at,
    data: {
      created_at: event.at,
      email_id: event.messageId,
      from: SIM_FROM,
      to: [SIM_TO],
      subject: 'Simulated message',
      ...(event.bounceType
        ? {
            bounce: {
              message: 'Simulated bounce from the receiving server.',
              subType: 'General',
              type: event.bounceType,
            },
          }
        : {}),
      tags: { [KEY_TAG]: label },
    },
  };
};

const SENDGRID_EVENTS: Readonly<Record<string, string>> = {
  sent: 'processed',
  delivered: 'delivered',
  bounced: 'bounce',
  complained: 'spamreport',
};

/**
 * SendGrid: one Event Webhook event. `sg_message_id` is the message id followed by a filter suffix, and
 * `smtp-id` carries the id as its local part, as the documented events do; custom args at the top level.
 */
export const sendGridWebhookEvent = (event: Event): Record<string, unknown> | undefined => {
  const name = SENDGRID_EVENTS[event.type];
  const label = event.tags?.[KEY_TAG];
  if (!name || !label) return undefined;
  return {
    email: SIM_TO,
    timestamp: Math.floor(Date.parse(event.at) / 1000),
    'smtp-id': `<${event.messageId}@simulator.sendproof.test>`,
    event: name,
    sg_event_id: event.id,
    sg_message_id: `${event.messageId}.filter0001.16648.5515E0B88.0`,
    ...(name === 'delivered' ? { response: '250 OK' } : {}),
    ...(name === 'bounce'
      ? event.bounceType === 'Transient'
        ? {
            bounce_classification: 'Technical',
            reason: '421 try again later',
            status: '4.0.0',
            type: 'blocked',
          }
        : {
            bounce_classification: 'Invalid Address',
            reason: '550 unknown recipient',
            status: '5.0.0',
            type: 'bounce',
          }
      : {}),
    sendproof_key: label,
  };
};

/** The simulator's SMS outcomes as Twilio MessageStatus values, with the error code Twilio adds to failures. */
const TWILIO_STATUS: Readonly<Record<string, { status: string; errorCode?: string }>> = {
  sent: { status: 'sent' },
  delivered: { status: 'delivered' },
  // 30003: Unreachable destination handset (a carrier failure).
  failed: { status: 'undelivered', errorCode: '30003' },
  // Not sent within the validity period: Twilio fails it (30001, queue overflow / validity expired).
  expired: { status: 'failed', errorCode: '30001' },
};

/** Twilio: the status callback's form parameters (MessageSid, MessageStatus, ErrorCode and the standard ones). */
export const twilioCallbackParams = (event: Event): Record<string, string> | undefined => {
  const mapped = TWILIO_STATUS[event.type];
  if (!mapped) return undefined;
  return {
    AccountSid: SIM_ACCOUNT_SID,
    ApiVersion: '2010-04-01',
    From: SIM_SMS_FROM,
    MessageSid: event.messageId,
    MessageStatus: mapped.status,
    SmsSid: event.messageId,
    SmsStatus: mapped.status,
    To: SIM_SMS_TO,
    ...(mapped.errorCode ? { ErrorCode: mapped.errorCode } : {}),
  };
};
