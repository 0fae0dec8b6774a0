import { describe, expect, it } from 'vitest';
import { parseLambdaEvent } from '../../../lib/evidence/events.js';
import { eventsFor, planFromRecipient, type SentMail } from '../../../lib/local/SesEventEmitter.js';

const KEY = 'a'.repeat(64);
const mail = (to: string): SentMail => ({
  messageId: 'ses-1',
  from: 'no-reply@sendproof.local',
  to: [to],
  tags: [{ Name: 'sendproof-key', Value: KEY }],
  sentAt: Date.parse('2026-12-01T10:00:00Z'),
});
const timing = { region: 'us-east-1', sendDelayMs: 100, deliverAfterMs: 1500 };

describe('SES event emitter: what a send turns into', () => {
  it('reads the mailbox-simulator address and its fault labels', () => {
    // Act + Assess
    expect(planFromRecipient('player@example.com')).toEqual({
      outcome: 'delivery',
      duplicate: false,
      outOfOrder: false,
    });
    expect(planFromRecipient('bounce@simulator.amazonses.com')).toMatchObject({
      outcome: 'bounce',
      bounceSubType: 'General',
    });
    expect(planFromRecipient('suppressionlist@simulator.amazonses.com')).toMatchObject({
      outcome: 'bounce',
      bounceSubType: 'OnAccountSuppressionList',
    });
    expect(planFromRecipient('bounce+transient+after20@simulator.amazonses.com')).toMatchObject({
      outcome: 'soft_bounce',
      deliverAfterMs: 20,
    });
    expect(planFromRecipient('complaint+dup+ooo@simulator.amazonses.com')).toEqual({
      outcome: 'complaint',
      duplicate: true,
      outOfOrder: true,
    });
    // A `bounce` mailbox elsewhere is an ordinary address: delivered.
    expect(planFromRecipient('bounce@example.com').outcome).toBe('delivery');
  });

  it('emits EventBridge-shaped SES events that the evidence parser reads as the intended facts', () => {
    // Act
    const bounce = eventsFor(
      mail('bounce@simulator.amazonses.com'),
      planFromRecipient('bounce@simulator.amazonses.com'),
      timing,
    );
    const soft = eventsFor(
      mail('x'),
      { outcome: 'soft_bounce', duplicate: false, outOfOrder: false, deliverAfterMs: 5 },
      timing,
    );
    const spam = eventsFor(mail('x'), { outcome: 'complaint', duplicate: true, outOfOrder: true }, timing);
    const facts = (steps: ReturnType<typeof eventsFor>) =>
      steps.flatMap((s) =>
        parseLambdaEvent(s.event).map((p) =>
          p.kind === 'evidence' ? [p.evidence.fact, p.evidence.why] : p.reason,
        ),
      );
    // Assess
    expect(bounce.map((s) => [s.event['detail-type'], s.delayMs])).toEqual([
      ['Email Sent', 100],
      ['Email Bounced', 1500],
    ]);
    expect(facts(bounce)).toEqual([
      ['sent', 'ses:Send'],
      ['bounced_permanent', 'ses:Bounce:Permanent/General'],
    ]);
    // deliver_after_ms never puts the outcome before the Send.
    expect(soft.map((s) => s.delayMs)).toEqual([100, 100]);
    expect(facts(soft)[1]).toEqual(['bounced_transient', 'ses:Bounce:Transient/General']);
    // Duplicated and newest first, all at the last event's time; the timestamps still say the truth.
    expect(spam.map((s) => s.event.detail.eventType)).toEqual([
      'Complaint',
      'Complaint',
      'Delivery',
      'Delivery',
      'Send',
      'Send',
    ]);
    expect(new Set(spam.map((s) => s.delayMs))).toEqual(new Set([1501]));
    expect(spam[0]!.event.detail.complaint).toMatchObject({ timestamp: '2026-12-01T10:00:01.501Z' });
  });
});
