import { describe, expect, it } from 'vitest';
import { parseLambdaEvent, parseSesEvent, parseSmsEvent } from '../../../lib/evidence/events.js';
import { parseRestEvent } from '../../../lib/evidence/PullEvidence.js';
import { parseResendEvent, parseSendGridEvent, parseTwilioCallback } from '../../../lib/evidence/webhooks.js';
import { labelKeyOf, sealLabel } from '../../../lib/transports/labels.js';

/** Parsing only checks a label's shape; the recorder opens it (lib/evidence/labelAuth.ts). */
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
          label: KEY,
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

  it('an SNS record whose message is not JSON, or carries a label of the wrong shape, is ignored', () => {
    // Act
    const parsed = parseLambdaEvent({
      Records: [
        { Sns: { Message: 'not json' } },
        {
          Sns: {
            Message: JSON.stringify({
              messageId: 'x',
              messageStatus: 'DELIVERED',
              context: { 'sendproof-key': 'not a label!' },
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

  it('every provider event hands its label on as it came, to be opened by the recorder; without one it is not ours', () => {
    // Prepare: the label the dispatcher sends (opaque: no tenant, purpose, event or recipient in it)
    const label = sealLabel(
      labelKeyOf('test-secret-0123456789'),
      'acme-games:password-reset:evt-1:player-1:email',
    );
    // Act
    const parsed = [
      parseSesEvent({ eventType: 'Send', mail: { messageId: 'm', tags: { 'sendproof-key': [label] } } }),
      parseSmsEvent({ messageId: 'm', messageStatus: 'DELIVERED', context: { 'sendproof-key': label } }),
      parseResendEvent({
        type: 'email.delivered',
        data: { email_id: 'm', tags: [{ name: 'sendproof-key', value: label }] },
      }),
      parseTwilioCallback(
        { MessageSid: 'SM1', MessageStatus: 'delivered' },
        `https://x.test/twilio?k=${label}`,
      ),
      parseSendGridEvent({ event: 'delivered', sg_event_id: 'e1', sendproof_key: label }),
      parseRestEvent({
        id: 'e1',
        type: 'delivered',
        messageId: 'm',
        channel: 'email',
        tags: { 'sendproof-key': label },
      }),
      parseSesEvent({
        eventType: 'Send',
        mail: { messageId: 'm', tags: { 'sendproof-purpose': ['receipt'] } },
      }),
    ];
    // Assess
    expect(parsed.map((p) => (p.kind === 'evidence' ? p.evidence.label : p.reason))).toEqual([
      label,
      label,
      label,
      label,
      label,
      label,
      'no_sendproof_key',
    ]);
  });
});
