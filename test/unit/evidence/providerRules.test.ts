import { describe, expect, it } from 'vitest';
import { bounceFact, parseLambdaEvent, parseSesEvent } from '../../../lib/evidence/events.js';
import { NOT_DELIVERED, SUPPRESSING, settlesTo } from '../../../lib/evidence/facts.js';
import { parseResendEvent, parseTwilioCallback, sendGridMessageId } from '../../../lib/evidence/webhooks.js';

const KEY = 'b'.repeat(64);

describe('one reading of every provider (issue 25, defects 4, 5, 7)', () => {
  it('one bounce rule: only Permanent is hard; a Permanent bounce of the provider’s own suppression list is provider_suppressed', () => {
    // Act / Assess
    expect(
      [
        ['Permanent', 'General'],
        ['Permanent', 'NoEmail'],
        ['Permanent', 'Suppressed'],
        ['Permanent', 'OnAccountSuppressionList'],
        ['Transient', 'MailboxFull'],
        ['Temporary', 'General'],
        ['Undetermined', 'Undetermined'],
        [undefined, undefined],
      ].map(([type, sub]) => bounceFact(type, sub)),
    ).toEqual([
      'bounced_permanent',
      'bounced_permanent',
      'provider_suppressed',
      'provider_suppressed',
      'bounced_transient',
      'bounced_transient',
      'bounced_transient',
      'bounced_transient',
    ]);
  });

  it('provider_suppressed is a definite non-delivery and a suppression; partially_delivered is neither', () => {
    // Assess
    expect(settlesTo('provider_suppressed')).toBe('rejected');
    expect(SUPPRESSING).toContain('provider_suppressed');
    expect(settlesTo('partially_delivered')).toBe('accepted');
    expect(NOT_DELIVERED).not.toContain('partially_delivered');
    expect(SUPPRESSING).not.toContain('partially_delivered');
  });

  it('an SES Complaint of subtype OnAccountSuppressionList is not a complaint: SES never sent it', () => {
    // Act
    const parsed = parseSesEvent({
      eventType: 'Complaint',
      complaint: { complaintSubType: 'OnAccountSuppressionList', timestamp: '2017-08-05T00:41:02.669Z' },
      mail: { messageId: 'm-1', tags: { 'sendproof-key': [KEY] } },
    });

    // Assess
    expect(parsed).toMatchObject({
      kind: 'evidence',
      evidence: { fact: 'provider_suppressed', outcome: 'rejected' },
    });
  });

  it('a Resend bounce of type Undetermined is soft, as the SES one is', () => {
    // Act
    const parsed = parseResendEvent({
      type: 'email.bounced',
      data: {
        email_id: 'e-1',
        tags: { 'sendproof-key': KEY },
        bounce: { type: 'Undetermined', subType: 'Undetermined' },
      },
    });

    // Assess
    expect(parsed).toMatchObject({ kind: 'evidence', evidence: { fact: 'bounced_transient' } });
  });

  it('SendGrid message ids: the filter suffix is cut, not the first dot; no leading space; smtp-id when sg_message_id is missing', () => {
    // Act / Assess
    expect(sendGridMessageId('14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0', undefined)).toBe(
      '14c5d75ce93.dfd.64b469',
    );
    expect(sendGridMessageId(' 14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0', undefined)).toBe(
      '14c5d75ce93.dfd.64b469',
    );
    expect(sendGridMessageId('5lFl7Fr1Rjme_EyzNNB_5A.stfilter-015.5185.55F883172.0', undefined)).toBe(
      '5lFl7Fr1Rjme_EyzNNB_5A',
    );
    expect(sendGridMessageId(undefined, '<14c5d75ce93.dfd.64b469@ismtpd-555>')).toBe(
      '14c5d75ce93.dfd.64b469',
    );
    expect(sendGridMessageId(undefined, undefined)).toBe('');
  });
});

describe('inbound opt-out and opt-in replies (issue 29): a signal, never delivery evidence', () => {
  const twoWay = (keyword: string, body: string) => ({
    Records: [
      {
        EventSource: 'aws:sns',
        Sns: {
          Message: JSON.stringify({
            originationNumber: '+14255550182',
            destinationNumber: '+12125550101',
            messageKeyword: keyword,
            messageBody: body,
            inboundMessageId: 'cae173d2-66b9-564c-8309-21f858e9fb84',
          }),
        },
      },
    ],
  });

  it('an SMS v2 two-way reply with an opt-out keyword is an opt_out signal; START an opt_in; a sentence is neither', () => {
    // Act
    const [stop] = parseLambdaEvent(twoWay('STOP', 'stop'));
    const [start] = parseLambdaEvent(twoWay('START', 'START'));
    const [sentence] = parseLambdaEvent(twoWay('', 'stop sending me offers'));

    // Assess
    expect(stop).toMatchObject({
      kind: 'ignored',
      signal: {
        kind: 'opt_out',
        provider: 'sms-v2',
        phone: '+14255550182',
        keyword: 'STOP',
        ourNumber: '+12125550101',
      },
    });
    expect(start).toMatchObject({ kind: 'ignored', signal: { kind: 'opt_in', keyword: 'START' } });
    expect(sentence).toMatchObject({ kind: 'ignored', reason: 'sms_inbound_not_an_opt_keyword' });
    expect(sentence).not.toHaveProperty('signal');
  });

  it('a Twilio inbound message decides by OptOutType only, not by reading the body', () => {
    // Act
    const base = { MessageSid: 'SM1', From: '+15558675310', To: '+15557122661', SmsStatus: 'received' };
    const stop = parseTwilioCallback(
      { ...base, Body: 'STOP', OptOutType: 'STOP' },
      'https://e.example/twilio',
    );
    const unflagged = parseTwilioCallback({ ...base, Body: 'STOP' }, 'https://e.example/twilio');

    // Assess
    expect(stop).toMatchObject({
      kind: 'ignored',
      signal: { kind: 'opt_out', provider: 'twilio', keyword: 'STOP' },
    });
    expect(unflagged).toMatchObject({ kind: 'ignored', reason: 'twilio_inbound_message' });
    expect(unflagged).not.toHaveProperty('signal');
  });
});
