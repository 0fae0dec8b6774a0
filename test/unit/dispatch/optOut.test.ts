import { beforeEach, describe, expect, it } from 'vitest';
import { NUMBER_TENANT, numberRefOf } from '../../../lib/ledger/optOut.js';
import type { OutboundMessage, SendResult, Transport } from '../../../lib/transports/port.js';
import { CONTENT_KEY, pdfAttachment } from '../../support/dispatchHarness.js';
import { healthReportIntent, MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { createMemoryHarness } from '../../support/memoryHarness.js';
import { RecordingTransport } from '../../support/recordingTransport.js';

/** An SMS provider whose recipient texted STOP: it refuses every send to them (SMS v2 / Twilio 21610). */
class OptedOutSms implements Transport {
  readonly name = 'twilio';
  readonly channel = 'sms' as const;
  readonly capabilities = new RecordingTransport('sms').capabilities;
  readonly calls: OutboundMessage[] = [];
  async send(message: OutboundMessage): Promise<SendResult> {
    this.calls.push(message);
    return { kind: 'rejected', reason: 'twilio_21610', code: '21610', cause: 'opted_out' };
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

describe('a send refused because the destination opted out (issue 29)', () => {
  it('ends suppressed (opted_out), suppresses the recipient and the number with source provider_opt_out, and the next intent stops at the gate', async () => {
    // Prepare
    const sms = new OptedOutSms();
    const transports = { email: h.transports.email, sms };
    const first = JSON.stringify(resetIntent({ eventId: 'otp-1', channels: ['sms'] }, clock.now()));
    const second = JSON.stringify(resetIntent({ eventId: 'otp-2', channels: ['sms'] }, clock.now()));

    // Act
    const one = await h.dispatcher({ transports }).handle(first, envelope());
    const two = await h.dispatcher({ transports }).handle(second, envelope());

    // Assess
    const row = (await h.ledger.get(one.channels[0]!.dedupeKey))!;
    expect(row.state).toBe('suppressed');
    expect(row.history.at(-1)?.why).toBe('opted_out');
    expect(row.history.some((e) => e.s === 'rejected')).toBe(false);
    expect(await h.suppressions.isSuppressed('acme-games', 'player-73', 'sms')).toEqual({
      suppressed: true,
      reason: 'opted_out',
    });
    const number = numberRefOf(MARKERS.phone, CONTENT_KEY);
    expect(number).not.toContain(MARKERS.phone.slice(1));
    expect(await h.suppressions.isSuppressed(NUMBER_TENANT, number, 'sms')).toMatchObject({
      suppressed: true,
    });
    expect(two.channels[0]).toMatchObject({ state: 'suppressed', action: 'suppressed' });
    expect(sms.calls).toHaveLength(1);
    // The other channel of the same recipient is not suppressed.
    expect((await h.suppressions.isSuppressed('acme-games', 'player-73', 'email')).suppressed).toBe(false);
  });

  it('a fallback purpose whose SMS is opted out still uses its other channel', async () => {
    // Prepare: health-report falls back; SMS first
    const sms = new OptedOutSms();
    const transports = { email: h.transports.email, sms };
    const body = JSON.stringify(
      healthReportIntent({
        eventId: 'report-opt',
        channels: ['sms', 'email'],
        attachments: [pdfAttachment()],
      }),
    );

    // Act
    const outcome = await h.dispatcher({ transports }).handle(body, envelope());

    // Assess
    expect(outcome.channels.map((c) => [c.channel, c.state])).toEqual([
      ['sms', 'suppressed'],
      ['email', 'accepted'],
    ]);
    expect(sms.calls).toHaveLength(1);
    expect(h.transports.email.calls).toHaveLength(1);
  });

  it('an opted-out number stops an intent of another tenant and recipient ref at the gate', async () => {
    // Prepare: the number was suppressed (an inbound STOP names only the number)
    await h.suppressions.suppress(
      NUMBER_TENANT,
      numberRefOf(MARKERS.phone, CONTENT_KEY),
      'sms',
      'opted_out',
      {
        source: 'provider_opt_out',
        at: clock.now(),
        by: 'provider:sms-v2:sms:inbound:abc',
      },
    );
    const body = JSON.stringify(
      resetIntent(
        {
          eventId: 'otp-3',
          channels: ['sms'],
          tenant: 'other-tenant',
          recipient: { ref: 'u-1', phone: MARKERS.phone },
        },
        clock.now(),
      ),
    );

    // Act
    const outcome = await h.dispatcher().handle(body, envelope());

    // Assess
    expect(outcome.channels[0]).toMatchObject({ state: 'suppressed' });
    expect(h.sends()).toHaveLength(0);
  });
});
