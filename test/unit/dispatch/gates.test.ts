import { readFile } from 'node:fs/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { createSqsHandler } from '../../../lib/dispatch/sqsHandler.js';
import { pdfAttachment } from '../../support/dispatchHarness.js';
import { healthReportIntent, MARKERS, receiptIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { createMemoryHarness } from '../../support/memoryHarness.js';

// Decisions only: the in-memory ledger (same contract as DynamoDB Local) and recording transports, no
// server. Crashes, replays under provider keys, retries and races stay in test/integration/dispatch.
const clock = new ManualClock(Date.now());
let h: ReturnType<typeof createMemoryHarness>;
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}` });

beforeEach(() => {
  clock.set(Date.now());
  h = createMemoryHarness(clock);
});

describe('dispatcher gates', () => {
  it('email + sms with delivery "all" makes two claims and two sends', async () => {
    const body = JSON.stringify(
      resetIntent({ eventId: 'both-channels', channels: ['email', 'sms'] }, clock.now()),
    );
    const result = await h.dispatcher().handle(body, envelope());
    expect(result.channels.map((c) => [c.channel, c.state])).toEqual([
      ['email', 'accepted'],
      ['sms', 'accepted'],
    ]);
    expect(h.sends().map((c) => c.message.channel)).toEqual(['email', 'sms']);
    expect([h.transports.email.accepted(), h.transports.sms.accepted()]).toEqual([1, 1]);
  });

  it('a receipt under template v5 after v4 is a new notification; a reset re-rendered with v2 is not', async () => {
    // Act
    const v4 = await h
      .dispatcher()
      .handle(JSON.stringify(receiptIntent({ eventId: 'rev-receipt' })), envelope());
    const v5 = await h
      .dispatcher()
      .handle(
        JSON.stringify(
          receiptIntent({ eventId: 'rev-receipt', template: { id: 'receipt', revision: 'v5' } }),
        ),
        envelope(),
      );
    const r1 = await h
      .dispatcher()
      .handle(JSON.stringify(resetIntent({ eventId: 'rev-reset' }, clock.now())), envelope());
    const r2 = await h
      .dispatcher()
      .handle(
        JSON.stringify(
          resetIntent(
            { eventId: 'rev-reset', template: { id: 'password-reset', revision: 'v2' } },
            clock.now(),
          ),
        ),
        envelope(),
      );
    // Assess
    expect([v4, v5].map((o) => o.channels[0]?.state)).toEqual(['accepted', 'accepted']);
    expect(v4.channels[0]?.dedupeKey).not.toBe(v5.channels[0]?.dedupeKey);
    expect(r1.channels[0]?.state).toBe('accepted');
    expect(r2.channels[0]).toMatchObject({ dedupeKey: r1.channels[0]?.dedupeKey, state: 'blocked' });
    expect(h.transports.email.accepted()).toBe(3);
    expect(h.sends()).toHaveLength(3);
  });

  it('a redelivered intent in a new SQS envelope after an accepted send does not call the transport', async () => {
    const body = JSON.stringify(resetIntent({ eventId: 'redelivery' }, clock.now()));
    await h.dispatcher().handle(body, { messageId: 'envelope-1' });
    const again = await h.dispatcher().handle(body, { messageId: 'envelope-2' });
    expect(again.channels[0]?.action).toBe('already_final');
    expect(h.sends()).toHaveLength(1);
  });

  it('two intents with the same identity and different content: one send, one blocked', async () => {
    // Prepare
    const first = receiptIntent({ eventId: 'same-identity' });
    const second = receiptIntent({ eventId: 'same-identity', data: { ...first.data, total: '9.99' } });
    // Act
    const a = await h.dispatcher().handle(JSON.stringify(first), envelope());
    const b = await h.dispatcher().handle(JSON.stringify(second), envelope());
    // Assess
    expect(a.channels[0]?.state).toBe('accepted');
    expect(b.channels[0]).toMatchObject({ state: 'blocked', action: 'content_mismatch_blocked' });
    expect(h.sends()).toHaveLength(1);
    const blocked = await h.ledger.get(
      `${a.channels[0]!.dedupeKey}#blocked#${(await h.ledger.get(a.channels[0]!.dedupeKey))!.contentHash.slice(3, 19)}`,
    );
    expect(blocked).toBeUndefined(); // the blocked row is keyed by the offered hash, not the stored one
    const rows = await h.ledger.findByEvent('same-identity');
    expect(rows.map((r) => [r.kind, r.state])).toEqual([
      ['delivery', 'accepted'],
      ['blocked', 'blocked'],
    ]);
    expect(rows[1]?.blockedAgainst).toBe(a.channels[0]!.dedupeKey);
  });

  it('an expired challenge waiting in the queue is expired, not sent', async () => {
    // Prepare: valid when published, ten minutes of queue delay later it is not
    const body = JSON.stringify(resetIntent({ eventId: 'expired-in-queue' }, clock.now()));
    clock.advance(11 * 60_000);
    // Act
    const result = await h.dispatcher().handle(body, envelope());
    // Assess
    expect(result.channels[0]?.state).toBe('expired');
    expect(h.sends()).toHaveLength(0);
    const row = await h.ledger.get(result.channels[0]!.dedupeKey);
    expect(row?.history.at(-1)?.why).toBe('expired_before_dispatch');
  });

  it('checks expiry again right before dispatching: an attachment fetch that outlasts the expiry ends in expired', async () => {
    // Prepare: a report that expires in one minute, and an attachment store whose fetch takes two
    const attachment = pdfAttachment();
    const slowStore = {
      fetch: async (uri: string) => {
        clock.advance(2 * 60_000);
        return new Uint8Array(await readFile(new URL(uri)));
      },
    };
    const body = JSON.stringify(
      healthReportIntent({
        eventId: 'expires-during-fetch',
        attachments: [attachment],
        expiresAt: new Date(clock.now() + 60_000).toISOString(),
      }),
    );
    // Act
    const result = await h.dispatcher({ attachments: slowStore }).handle(body, envelope());
    // Assess
    expect(result.channels[0]).toMatchObject({ channel: 'email', state: 'expired' });
    expect(h.sends()).toHaveLength(0);
    const row = await h.ledger.get(result.channels[0]!.dedupeKey);
    // The gates run before the claim: the row is written once, directly as expired.
    expect(row?.history.map((e) => e.s)).toEqual(['expired']);
  });

  it('a suppressed recipient is recorded as suppressed and never sent', async () => {
    await h.suppressions.suppress('acme-games', 'player-suppressed', 'email', 'hard_bounce');
    const body = JSON.stringify(
      resetIntent(
        { eventId: 'suppressed', recipient: { ref: 'player-suppressed', email: MARKERS.email } },
        clock.now(),
      ),
    );
    const result = await h.dispatcher().handle(body, envelope());
    expect(result.channels[0]?.state).toBe('suppressed');
    expect(h.sends()).toHaveLength(0);
  });

  it('an attachment whose bytes do not match its sha256 is blocked before anything is sent', async () => {
    const attachment = { ...pdfAttachment(), sha256: 'f'.repeat(64) };
    const body = JSON.stringify(healthReportIntent({ eventId: 'bad-checksum', attachments: [attachment] }));
    const result = await h.dispatcher().handle(body, envelope());
    expect(result.channels[0]).toMatchObject({ channel: 'email', state: 'blocked' });
    expect(h.sends()).toHaveLength(0);
  });
});

describe('SQS batch handling', () => {
  it('a batch with one poison message reports only that message as failed; an invalid one is recorded, not retried', async () => {
    // Prepare
    const good = JSON.stringify(resetIntent({ eventId: 'batch-good' }, clock.now()));
    const poison = JSON.stringify(
      healthReportIntent({
        eventId: 'batch-poison',
        attachments: [{ ...pdfAttachment(), uri: 'file:///nonexistent/report.pdf' }],
      }),
    );
    const invalid = '{"eventId": "batch-invalid", "surprise": true';
    const record = (messageId: string, body: string) =>
      ({ messageId, body, attributes: { ApproximateReceiveCount: '1' } }) as never;
    const handler = createSqsHandler(h.dispatcher(), { concurrency: 2 });
    // Act
    const response = await handler({
      Records: [record('m-good', good), record('m-poison', poison), record('m-invalid', invalid)],
    });
    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-poison' }]);
    expect(h.transports.email.accepted()).toBe(1);
    expect(h.sends()).toHaveLength(1);
    const invalidRows = (await h.ledger.findByEvent('-')).filter((r) => r.kind === 'invalid');
    expect(invalidRows.some((r) => r.issues?.[0]?.field === '(root)')).toBe(true);
  });

  it('an invalid body keeps searchable ids as hints, but never one that could be an address', async () => {
    // Prepare: unknown field makes it invalid; the eventId is an email address, the tenant is fine
    const body = JSON.stringify({ ...resetIntent({}, clock.now()), eventId: MARKERS.email, surprise: 1 });
    // Act
    const result = await h.dispatcher().handle(body, envelope());
    // Assess
    expect(result.invalid?.issues.map((i) => i.field)).toContain('(root)');
    const rows = (await h.ledger.findByEvent('-')).filter(
      (r) => r.kind === 'invalid' && r.tenant === 'acme-games',
    );
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows)).not.toContain(MARKERS.email);
  });
});
