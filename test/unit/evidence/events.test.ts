import { describe, expect, it } from 'vitest';
import { hashKey, rowLabelOf } from '../../../lib/domain/keys.js';
import { parseLambdaEvent, parseSesEvent, parseSmsEvent } from '../../../lib/evidence/events.js';
import { parseRestEvent } from '../../../lib/evidence/PullEvidence.js';
import { parseResendEvent, parseSendGridEvent, parseTwilioCallback } from '../../../lib/evidence/webhooks.js';

const KEY = 'a'.repeat(64);

describe('provider events as evidence', () => {
  it('an SES Bounce in an EventBridge envelope is rejection evidence keyed by the message id and event type', () => {
    // Prepare
    const event = {
      source: 'aws.ses',
      detail: {
        eventType: 'Bounce',
        bounce: { bounceType: 'Permanent', bounceSubType: 'General' },
        mail: { messageId: 'm-1', destination: ['someone@example.com'], tags: { 'sendproof-key': [KEY] } },
      },
    };
    // Act
    const parsed = parseLambdaEvent(event);
    // Assess
    expect(parsed).toEqual([
      {
        kind: 'evidence',
        evidence: {
          source: 'ses',
          evidenceId: 'ses:m-1:Bounce',
          idempotencyKey: KEY,
          fact: 'bounced_permanent',
          outcome: 'rejected',
          providerMessageId: 'm-1',
          why: 'ses:Bounce:Permanent/General',
        },
      },
    ]);
    expect(JSON.stringify(parsed)).not.toContain('someone@example.com');
  });

  it('SES Send, Delivery and DeliveryDelay are acceptance, Rendering Failure is rejection, to acceptance, and Subscription is not evidence', () => {
    // Act
    const kinds = ['Send', 'Delivery', 'DeliveryDelay', 'Rendering Failure', 'Subscription'].map(
      (eventType) => {
        const parsed = parseSesEvent({
          eventType,
          mail: { messageId: 'm', tags: { 'sendproof-key': [KEY] } },
        });
        return parsed.kind === 'evidence' ? parsed.evidence.outcome : parsed.reason;
      },
    );
    // Assess
    expect(kinds).toEqual([
      'accepted',
      'accepted',
      'accepted',
      'rejected',
      'ses_event_type_not_evidence:Subscription',
    ]);
  });

  it('an SMS failure that is not final is not evidence; a final one is', () => {
    // Prepare
    const base = { messageId: 's-1', messageStatus: 'UNREACHABLE', context: { 'sendproof-key': KEY } };
    // Act
    const interim = parseSmsEvent({ ...base, isFinal: false });
    const final = parseSmsEvent({ ...base, isFinal: true });
    // Assess
    expect(interim).toMatchObject({ kind: 'ignored', reason: 'sms_status_not_evidence:UNREACHABLE' });
    expect(final).toMatchObject({
      kind: 'evidence',
      evidence: { outcome: 'rejected', evidenceId: 'sms:s-1:UNREACHABLE' },
    });
  });

  it('an SNS record whose message is not JSON, or carries a key of the wrong shape, is ignored', () => {
    // Act
    const parsed = parseLambdaEvent({
      Records: [
        { Sns: { Message: 'not json' } },
        {
          Sns: {
            Message: JSON.stringify({
              messageId: 'x',
              messageStatus: 'DELIVERED',
              context: { 'sendproof-key': 'short' },
            }),
          },
        },
      ],
    });
    // Assess
    expect(parsed.map((p) => (p.kind === 'ignored' ? p.reason : p.kind))).toEqual([
      'sns_message_not_json',
      'no_sendproof_key',
    ]);
  });

  it('every provider event that echoes our row label names its row; without the label it names none', () => {
    // Prepare
    const row = 'acme-games:password-reset:evt-1:player-1:email';
    const key = hashKey(row);
    const label = rowLabelOf(row)!;
    // Act
    const parsed = [
      parseSesEvent({
        eventType: 'Send',
        mail: { messageId: 'm', tags: { 'sendproof-key': [key], 'sendproof-row': [label] } },
      }),
      parseSmsEvent({
        messageId: 'm',
        messageStatus: 'DELIVERED',
        context: { 'sendproof-key': key, 'sendproof-row': label },
      }),
      parseResendEvent({
        type: 'email.delivered',
        data: {
          email_id: 'm',
          tags: [
            { name: 'sendproof-key', value: key },
            { name: 'sendproof-row', value: label },
          ],
        },
      }),
      parseTwilioCallback(
        { MessageSid: 'SM1', MessageStatus: 'delivered' },
        `https://x.test/twilio?k=${key}&r=${label}`,
      ),
      parseSendGridEvent({ event: 'delivered', sg_event_id: 'e1', sendproof_key: key, sendproof_row: label }),
      parseRestEvent({
        id: 'e1',
        type: 'delivered',
        messageId: 'm',
        idempotencyKey: key,
        channel: 'email',
        tags: { 'sendproof-row': label },
      }),
      parseSesEvent({ eventType: 'Send', mail: { messageId: 'm', tags: { 'sendproof-key': [key] } } }),
    ];
    // Assess
    expect(parsed.map((p) => (p.kind === 'evidence' ? (p.evidence.rowKey ?? 'none') : p.reason))).toEqual([
      row,
      row,
      row,
      row,
      row,
      row,
      'none',
    ]);
  });
});
