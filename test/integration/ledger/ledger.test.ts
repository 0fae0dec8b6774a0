import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildClaimRecord } from '../../../lib/dispatch/claimRecord.js';
import { contentHash } from '../../../lib/domain/content.js';
import { parseIntent } from '../../../lib/domain/intent.js';
import { labelCarriesKey } from '../../../lib/domain/keys.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { TERMINAL_STATES, TRANSITIONS } from '../../../lib/domain/states.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';
import { MARKERS, receiptIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

const clock = new ManualClock();
const purposes = new PurposeRegistry();
let ledger: DynamoLedger;
let table: string;
const { raw, doc } = localDynamo();

beforeAll(async () => {
  table = await createLedgerTable(raw);
  ledger = new DynamoLedger(doc, table);
});

let counter = 0;
/** A claim row built the way the dispatcher builds it, from a validated intent. */
const claimRow = (
  overrides: { eventId?: string; leaseMs?: number; intent?: unknown } = {},
): DeliveryRecord => {
  counter += 1;
  const raw =
    overrides.intent ?? resetIntent({ eventId: overrides.eventId ?? `rst_${counter}` }, clock.now());
  const parsed = parseIntent(raw, { purposes, clock });
  if (!parsed.ok) throw parsed.error;
  return buildClaimRecord({
    valid: parsed.value,
    channel: 'email',
    contentHash: contentHash(
      { channel: 'email', subject: 's', text: `body ${MARKERS.token}` },
      'k'.repeat(32),
    ),
    templateOwner: 'application',
    workerId: 'dispatch:w1',
    now: clock.now(),
    leaseMs: overrides.leaseMs ?? 90_000,
  });
};

describe('DynamoLedger on DynamoDB Local', () => {
  it('refuses a transition whose version is stale, and leaves the row as the winner wrote it', async () => {
    // Prepare
    const row = claimRow();
    await ledger.claim(row);
    const first = await ledger.transition({
      pk: row.pk,
      from: 'claimed',
      to: 'dispatching',
      expectedVersion: 1,
      by: 'dispatch:w1',
      now: clock.now(),
    });
    // Act: a second writer that read version 1 tries to move the row too
    const second = await ledger.transition({
      pk: row.pk,
      from: 'claimed',
      to: 'expired',
      expectedVersion: 1,
      by: 'dispatch:w2',
      now: clock.now(),
    });
    // Assess
    expect(first.kind).toBe('ok');
    expect(second.kind).toBe('stale');
    if (second.kind === 'stale') expect(second.current).toMatchObject({ state: 'dispatching', version: 2 });
    const stored = await ledger.get(row.pk);
    expect(stored?.history.map((h) => h.s)).toEqual(['claimed', 'dispatching']);
  });

  it('lets exactly one of eight workers take over an expired claimed lease, and none before it expires', async () => {
    // Prepare
    const row = claimRow({ leaseMs: 1_000 });
    await ledger.claim(row);
    const takeover = (worker: number) =>
      ledger.transition({
        pk: row.pk,
        from: 'claimed',
        to: 'claimed',
        expectedVersion: 1,
        by: `dispatch:t${worker}`,
        why: 'lease_takeover',
        leaseExpiredBefore: clock.now(),
        set: { leaseOwner: `dispatch:t${worker}`, leaseUntil: clock.now() + 90_000 },
        now: clock.now(),
      });
    // Act: too early
    const early = await takeover(0);
    clock.advance(2_000);
    const racing = await Promise.all(Array.from({ length: 8 }, (_, i) => takeover(i + 1)));
    // Assess
    expect(early.kind).toBe('stale');
    expect(racing.filter((r) => r.kind === 'ok')).toHaveLength(1);
    const stored = await ledger.get(row.pk);
    expect(stored?.version).toBe(2);
    expect(stored?.history.map((h) => h.why)).toEqual(['intent_received', 'lease_takeover']);
  });

  it('turns an expired dispatching lease into unknown, never back into a claimable row', async () => {
    // Prepare
    const row = claimRow({ leaseMs: 1_000 });
    await ledger.claim(row);
    await ledger.transition({
      pk: row.pk,
      from: 'claimed',
      to: 'dispatching',
      expectedVersion: 1,
      by: 'dispatch:w1',
      set: { leaseUntil: clock.now() + 1_000, attempts: 1 },
      now: clock.now(),
    });
    clock.advance(5_000);
    // Act
    const toClaimed = () =>
      ledger.transition({
        pk: row.pk,
        from: 'dispatching',
        to: 'claimed',
        expectedVersion: 2,
        by: 'x',
        now: clock.now(),
      });
    const toUnknown = await ledger.transition({
      pk: row.pk,
      from: 'dispatching',
      to: 'unknown',
      expectedVersion: 2,
      by: 'dispatch:w2',
      why: 'dispatching_lease_expired',
      leaseExpiredBefore: clock.now(),
      now: clock.now(),
    });
    const reclaim = await ledger.claim(
      claimRow({ intent: resetIntent({ eventId: row.eventId }, clock.now()) }),
    );
    // Assess
    await expect(toClaimed()).rejects.toThrow(/not in the state table/);
    expect(toUnknown.kind).toBe('ok');
    expect(reclaim.kind).toBe('conflict');
    await expect(
      ledger.transition({
        pk: row.pk,
        from: 'unknown',
        to: 'claimed',
        expectedVersion: 3,
        by: 'x',
        now: clock.now(),
      }),
    ).rejects.toThrow(/not in the state table/);
    const page = await ledger.listAttention('unknown');
    expect(page.items.map((i) => i.pk)).toContain(row.pk);
  });

  it('refuses any transition out of a terminal state', async () => {
    // Prepare
    const row = claimRow();
    await ledger.claim(row);
    await ledger.transition({
      pk: row.pk,
      from: 'claimed',
      to: 'dispatching',
      expectedVersion: 1,
      by: 'w',
      now: clock.now(),
    });
    await ledger.transition({
      pk: row.pk,
      from: 'dispatching',
      to: 'accepted',
      expectedVersion: 2,
      by: 'w',
      set: { providerMessageId: 'msg-1' },
      now: clock.now(),
    });
    // Act / Assess
    for (const terminal of TERMINAL_STATES) expect(TRANSITIONS[terminal]).toEqual([]);
    for (const to of ['dispatching', 'unknown', 'rejected', 'claimed'] as const) {
      await expect(
        ledger.transition({
          pk: row.pk,
          from: 'accepted',
          to,
          expectedVersion: 3,
          by: 'w',
          now: clock.now(),
        }),
      ).rejects.toThrow(/accepted → /);
    }
    expect((await ledger.get(row.pk))?.state).toBe('accepted');
  });

  it('spends at most 3 write units on the happy path, with full history and no index writes', async () => {
    // Prepare: long-ish real identifiers, as a receipt (revision in the key) would have
    const row = claimRow({
      intent: receiptIntent({
        eventId: 'pay_84721-ord_219-with-a-long-event-id',
        recipient: { ref: 'player-7300000000-eu-west', email: MARKERS.email },
      }),
    });
    // Act
    const claim = await ledger.claim(row);
    const dispatching = await ledger.transition({
      pk: row.pk,
      from: 'claimed',
      to: 'dispatching',
      expectedVersion: 1,
      by: 'dispatch:7f3c9a1e',
      why: 'gates_passed',
      set: { attempts: 1, transport: 'ses', leaseUntil: clock.now() + 90_000 },
      now: clock.now(),
    });
    const accepted = await ledger.transition({
      pk: row.pk,
      from: 'dispatching',
      to: 'accepted',
      expectedVersion: 2,
      by: 'dispatch:7f3c9a1e',
      why: 'provider_accepted',
      set: {
        providerMessageId: '0100018c1f2e3d4c-5b6a7988-1234-4c5d-9e8f-a1b2c3d4e5f6-000000',
        attempts: 1,
        ttl: Math.floor(clock.now() / 1000) + 400 * 86400,
      },
      now: clock.now(),
    });
    // Assess
    const units = [claim, dispatching, accepted].map((r) => r.consumedWriteUnits);
    for (const u of units) expect(u).toBeGreaterThan(0);
    // Three row writes and no evidence pointer: the key fits in its label, which evidence names its row by.
    expect(labelCarriesKey(row.pk)).toBe(true);
    expect(units.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(3);
    expect(
      (await doc.send(new GetCommand({ TableName: table, Key: { pk: `ev#${row.idempotencyKey}` } }))).Item,
    ).toBeUndefined();
    const stored = await ledger.get(row.pk);
    expect(stored?.history.map((h) => h.s)).toEqual(['claimed', 'dispatching', 'accepted']);
    expect(stored?.attn).toBeUndefined();
  });

  it('writes the evidence pointer only for a row that may be sent and whose key is too long for a row label', async () => {
    // Prepare: identifiers at their 128-character limit make a key no 256-character label can carry
    const longRow = (eventId: string) =>
      claimRow({
        intent: resetIntent(
          { eventId, recipient: { ref: `r${'y'.repeat(127)}`, email: MARKERS.email } },
          clock.now(),
        ),
      });
    const long = longRow(`e${'x'.repeat(127)}`);
    const { leaseOwner: _o, leaseUntil: _u, ...unleased } = longRow(`f${'x'.repeat(127)}`);
    const refused: DeliveryRecord = {
      ...unleased,
      state: 'expired',
      history: [{ ...unleased.history[0]!, s: 'expired' }],
    };
    const pointerOf = async (row: DeliveryRecord) =>
      (await doc.send(new GetCommand({ TableName: table, Key: { pk: `ev#${row.idempotencyKey}` } }))).Item;
    // Act
    const claimed = await ledger.claim(long);
    const gated = await ledger.claim(refused);
    // Assess
    expect([labelCarriesKey(long.pk), labelCarriesKey(refused.pk)]).toEqual([false, false]);
    expect(claimed.kind).toBe('claimed');
    expect(await pointerOf(long)).toMatchObject({ ref: long.pk, kind: 'evidence' });
    // A row a gate refused is never sent, so no provider event will look for it.
    expect(gated.kind).toBe('claimed');
    expect(await pointerOf(refused)).toBeUndefined();
  });

  it('stores no secret value and no raw address after a claim made from an intent that had both', async () => {
    // Prepare
    const row = claimRow({
      intent: resetIntent(
        { channels: ['email', 'sms'], secrets: { token: MARKERS.token, otp: MARKERS.otp } },
        clock.now(),
      ),
    });
    // Act
    await ledger.claim(row);
    const stored = await doc.send(new GetCommand({ TableName: table, Key: { pk: row.pk } }));
    // Assess
    const text = JSON.stringify(stored.Item);
    expect(stored.Item).toBeDefined();
    for (const secret of [MARKERS.token, MARKERS.otp, MARKERS.email, MARKERS.phone, 'quest.example']) {
      expect(text).not.toContain(secret);
    }
  });

  it('lists attention rows oldest first, page by page, without scanning the table', async () => {
    // Prepare: three rows enter unknown at increasing times
    const local = await createLedgerTable(raw, 'attn');
    const l = new DynamoLedger(doc, local);
    const pks: string[] = [];
    for (let i = 0; i < 3; i++) {
      const row = claimRow();
      await l.claim(row);
      await l.transition({
        pk: row.pk,
        from: 'claimed',
        to: 'dispatching',
        expectedVersion: 1,
        by: 'w',
        now: clock.now(),
      });
      clock.advance(1000);
      await l.transition({
        pk: row.pk,
        from: 'dispatching',
        to: 'unknown',
        expectedVersion: 2,
        by: 'w',
        now: clock.now(),
      });
      pks.push(row.pk);
    }
    // Act
    const first = await l.listAttention('unknown', { limit: 2 });
    const second = await l.listAttention('unknown', {
      limit: 2,
      ...(first.cursor ? { cursor: first.cursor } : {}),
    });
    // Assess
    expect([...first.items, ...second.items].map((i) => i.pk)).toEqual(pks);
    expect(first.cursor).toBeDefined();
  });

  it('lets exactly one fallback channel be active and advances only from the active index', async () => {
    // Prepare
    const flowKey = `t:health-report:report-${counter++}:p`;
    const opened = await Promise.all(
      Array.from({ length: 4 }, () => ledger.openFlow(flowKey, ['email', 'sms'])),
    );
    // Act
    const advances = await Promise.all(Array.from({ length: 4 }, () => ledger.advanceFlow(flowKey, 0, 1)));
    const beyond = await ledger.advanceFlow(flowKey, 1, 2);
    // Assess
    expect(opened.every((f) => f.activeIndex === 0)).toBe(true);
    expect(advances.filter(Boolean)).toHaveLength(1);
    expect(beyond).toBeUndefined();
    expect(await ledger.getFlow(flowKey)).toMatchObject({ activeIndex: 1, version: 2 });
  });
});
