import { beforeEach, describe, expect, it } from 'vitest';
import type { OutboundMessage, SendResult, Transport } from '../../../lib/transports/port.js';
import { pdfAttachment } from '../../support/dispatchHarness.js';
import { healthReportIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { createMemoryHarness } from '../../support/memoryHarness.js';
import { RecordingTransport } from '../../support/recordingTransport.js';

/** A provider whose account is held (SES sending paused, a daily quota): every send answers the same. */
class HeldTransport implements Transport {
  readonly name = 'held';
  readonly channel = 'email' as const;
  readonly capabilities = new RecordingTransport('email').capabilities;
  readonly calls: OutboundMessage[] = [];
  constructor(private readonly answer: SendResult) {}
  async send(message: OutboundMessage): Promise<SendResult> {
    this.calls.push(message);
    return this.answer;
  }
}

const clock = new ManualClock(Date.now());
let h: ReturnType<typeof createMemoryHarness>;
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}` });

beforeEach(() => {
  clock.set(Date.now());
  h = createMemoryHarness(clock);
});

describe('an account-level hold (issue 25, defects 1 and 2)', () => {
  it('a held email is never rejected, spends no retry budget and never moves the fallback to SMS', async () => {
    // Prepare: SES answers SendingPausedException on every attempt (classified as a hold)
    const email = new HeldTransport({
      kind: 'retryable',
      reason: 'SendingPausedException',
      retryAfterMs: 10 * 60_000,
      hold: { reason: 'sending_paused' },
    });
    const transports = { email, sms: h.transports.sms };
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'held-report', attachments: [pdfAttachment()] }),
    );

    // Act: the queue brings the message back, due, more times than the purpose allows attempts (4)
    const outcomes = [];
    for (let i = 0; i < 6; i++) {
      outcomes.push(await h.dispatcher({ transports }).handle(body, envelope()));
      clock.advance(11 * 60_000);
    }

    // Assess
    const row = (await h.ledger.get(outcomes[0]!.channels[0]!.dedupeKey))!;
    expect(email.calls.length).toBeGreaterThan(4);
    expect(row.state).toBe('retry_wait');
    expect(row.history.some((e) => e.s === 'rejected')).toBe(false);
    expect(h.transports.sms.calls).toHaveLength(0);
  });

  it('a plain retryable answer still ends in rejected once the budget is spent (the hold is what differs)', async () => {
    // Prepare
    const email = new HeldTransport({ kind: 'retryable', reason: 'http_429', retryAfterMs: 10 * 60_000 });
    const transports = { email, sms: h.transports.sms };
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'throttled-report', attachments: [pdfAttachment()] }),
    );

    // Act
    const outcomes = [];
    for (let i = 0; i < 6; i++) {
      outcomes.push(await h.dispatcher({ transports }).handle(body, envelope()));
      clock.advance(11 * 60_000);
    }

    // Assess
    const row = (await h.ledger.get(outcomes[0]!.channels[0]!.dedupeKey))!;
    expect(row.state).toBe('rejected');
    expect(email.calls).toHaveLength(4);
  });
});
