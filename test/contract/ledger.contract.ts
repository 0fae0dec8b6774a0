import { describe, expect, it } from 'vitest';
import { buildClaimRecord } from '../../lib/dispatch/claimRecord.js';
import { contentHash } from '../../lib/domain/content.js';
import { TransitionRefusedError } from '../../lib/domain/errors.js';
import { type IntentInput, parseIntent } from '../../lib/domain/intent.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { TERMINAL_STATES } from '../../lib/domain/states.js';
import { attentionShardOf } from '../../lib/ledger/attentionIndex.js';
import { expireDispatchingLease } from '../../lib/ledger/leases.js';
import type { OperatorQueries } from '../../lib/ledger/operatorQueries.js';
import type { CancelOrder, DeliveryRecord, Ledger, SealedIntent } from '../../lib/ledger/port.js';
import { resetIntent } from '../support/fixtures.js';
import { ManualClock } from '../support/manualClock.js';

/** Builds a fresh, empty ledger (its own table) for one case, with the operator queries over the same table. */
export type LedgerFactory = (options: {
  attentionShards: number;
}) => Promise<{ ledger: Ledger; queries: OperatorQueries }>;

const SHARDS = 4;
const purposes = new PurposeRegistry();

/**
 * The ledger port's contract: what every implementation must do, case by case. Run against the
 * in-memory ledger (test/unit/ledger/memoryLedger.test.ts) and against DynamoDB Local
 * (test/integration/ledger/ledgerContract.test.ts), so the two cannot drift: a case added here runs on
 * both. The operator queries (lib/ledger/operatorQueries.ts) are held to it beside the port. Modelled on Powertools' PersistenceLayerTestClass. Capacity units are not part of the contract
 * (DynamoDB's charges are proven in test/integration/ledger/ledger.test.ts).
 */
export const ledgerContract = (name: string, factory: LedgerFactory): void => {
  describe(`the ledger contract: ${name}`, () => {
    const clock = new ManualClock();
    let counter = 0;
    const open = () => factory({ attentionShards: SHARDS });
    const fresh = async () => (await open()).ledger;

    /** A claim row built the way the dispatcher builds it, from a validated intent. */
    const claimRow = (
      overrides: {
        eventId?: string;
        leaseMs?: number;
        body?: string;
        intent?: Partial<IntentInput>;
        initial?: Parameters<typeof buildClaimRecord>[0]['initial'];
      } = {},
    ): DeliveryRecord => {
      counter += 1;
      const parsed = parseIntent(
        resetIntent(
          { eventId: overrides.eventId ?? `contract_${counter}`, ...overrides.intent },
          clock.now(),
        ),
        { purposes, clock },
      );
      if (!parsed.ok) throw parsed.error;
      return buildClaimRecord({
        valid: parsed.value,
        channel: 'email',
        contentHash: contentHash(
          { channel: 'email', subject: 's', text: overrides.body ?? 'body' },
          'k'.repeat(32),
        ),
        templateOwner: 'application',
        workerId: 'dispatch:w1',
        now: clock.now(),
        leaseMs: overrides.leaseMs ?? 90_000,
        ...(overrides.initial ? { initial: overrides.initial } : {}),
      });
    };

    const claimed = async (ledger: Ledger, row = claimRow()): Promise<DeliveryRecord> => {
      const out = await ledger.claim(row);
      if (out.kind !== 'claimed') throw new Error('claim failed');
      return out.record;
    };

    /** claimed → dispatching → unknown through the ledger's own transitions. */
    const toUnknown = async (ledger: Ledger, row = claimRow()): Promise<DeliveryRecord> => {
      await claimed(ledger, row);
      await ledger.transition({
        pk: row.pk,
        from: 'claimed',
        to: 'dispatching',
        expectedVersion: 1,
        by: 'w',
        now: clock.now(),
      });
      const out = await ledger.transition({
        pk: row.pk,
        from: 'dispatching',
        to: 'unknown',
        expectedVersion: 2,
        by: 'w',
        now: clock.now(),
      });
      if (out.kind !== 'ok') throw new Error('unknown failed');
      return out.record;
    };

    describe('claim', () => {
      it('creates the row as given, readable by key', async () => {
        // Prepare
        const ledger = await fresh();
        const row = claimRow();
        // Act
        const out = await ledger.claim(row);
        // Assess
        expect(out.kind).toBe('claimed');
        expect(await ledger.get(row.pk)).toEqual(row);
        expect(await ledger.get(`${row.pk}-absent`)).toBeUndefined();
      });

      it('returns the existing row on a conflict and never overwrites it', async () => {
        // Prepare
        const ledger = await fresh();
        const first = claimRow({ eventId: 'same', body: 'one' });
        const second = claimRow({ eventId: 'same', body: 'two' });
        await ledger.claim(first);
        // Act
        const out = await ledger.claim(second);
        // Assess
        expect(second.pk).toBe(first.pk);
        expect(out.kind).toBe('conflict');
        if (out.kind === 'conflict') expect(out.existing).toEqual(first);
        expect((await ledger.get(first.pk))?.contentHash).toBe(first.contentHash);
      });

      it('lets exactly one of eight concurrent claims of one key win', async () => {
        // Prepare
        const ledger = await fresh();
        const rows = Array.from({ length: 8 }, (_, i) => claimRow({ eventId: 'race', body: `b${i}` }));
        // Act
        const results = await Promise.all(rows.map((row) => ledger.claim(row)));
        // Assess
        const winners = results.filter((r) => r.kind === 'claimed');
        expect(winners).toHaveLength(1);
        const stored = await ledger.get(rows[0]!.pk);
        expect(stored?.contentHash).toBe(winners[0]?.record.contentHash);
        for (const r of results) if (r.kind === 'conflict') expect(r.existing).toEqual(stored);
      });

      it('refuses a row that does not start at version 1 with one history entry in an initial state', async () => {
        // Prepare
        const ledger = await fresh();
        const row = claimRow();
        // Act / Assess
        await expect(ledger.claim({ ...row, version: 2 })).rejects.toBeInstanceOf(TransitionRefusedError);
        await expect(ledger.claim({ ...row, history: [] })).rejects.toBeInstanceOf(TransitionRefusedError);
        await expect(
          ledger.claim({ ...row, state: 'unknown', history: [{ ...row.history[0]!, s: 'unknown' }] }),
        ).rejects.toThrow(/cannot be created in state unknown/);
        expect(await ledger.get(row.pk)).toBeUndefined();
      });
    });

    describe('transition', () => {
      it('moves a row on the expected state and version, appending one history entry and its attributes', async () => {
        // Prepare
        const ledger = await fresh();
        const row = await claimed(ledger);
        clock.advance(10);
        // Act
        const dispatching = await ledger.transition({
          pk: row.pk,
          from: 'claimed',
          to: 'dispatching',
          expectedVersion: 1,
          by: 'dispatch:w1',
          why: 'gates_passed',
          set: { attempts: 1, transport: 'ses', leaseUntil: clock.now() + 90_000 },
          now: clock.now(),
        });
        const accepted = await ledger.transition({
          pk: row.pk,
          from: 'dispatching',
          to: 'accepted',
          expectedVersion: 2,
          by: 'dispatch:w1',
          why: 'provider_accepted',
          set: { providerMessageId: 'msg-1', attempts: 1, ttl: 123 },
          now: clock.now(),
        });
        // Assess
        expect(dispatching.kind).toBe('ok');
        expect(accepted.kind).toBe('ok');
        const stored = await ledger.get(row.pk);
        if (accepted.kind === 'ok') expect(accepted.record).toEqual(stored);
        expect(stored).toMatchObject({
          state: 'accepted',
          version: 3,
          transport: 'ses',
          providerMessageId: 'msg-1',
          attempts: 1,
          ttl: 123,
          updatedAt: clock.now(),
        });
        // The entry that sets the transport names the provider of the attempt (`p`, issue 29).
        expect(stored?.history.slice(1)).toEqual([
          { s: 'dispatching', at: clock.now(), by: 'dispatch:w1', why: 'gates_passed', n: 1, p: 'ses' },
          { s: 'accepted', at: clock.now(), by: 'dispatch:w1', why: 'provider_accepted', msg: 'msg-1', n: 1 },
        ]);
        // Leaving the leased states drops the lease; the happy path never touches the attention index.
        expect(stored?.leaseOwner).toBeUndefined();
        expect(stored?.leaseUntil).toBeUndefined();
        expect(stored?.attn).toBeUndefined();
        expect(stored?.attnAt).toBeUndefined();
      });

      it('refuses a stale version and a wrong state, returning the row as the winner wrote it', async () => {
        // Prepare: the winner keeps the state (a lease takeover) and moves the version
        const ledger = await fresh();
        const row = await claimed(ledger);
        const first = await ledger.transition({
          pk: row.pk,
          from: 'claimed',
          to: 'claimed',
          expectedVersion: 1,
          by: 'dispatch:w1',
          now: clock.now(),
        });
        // Act
        const staleVersion = await ledger.transition({
          pk: row.pk,
          from: 'claimed',
          to: 'dispatching',
          expectedVersion: 1,
          by: 'dispatch:w2',
          now: clock.now(),
        });
        const wrongState = await ledger.transition({
          pk: row.pk,
          from: 'stalled',
          to: 'expired',
          expectedVersion: 2,
          by: 'dispatch:w2',
          now: clock.now(),
        });
        const missing = await ledger.transition({
          pk: `${row.pk}-absent`,
          from: 'claimed',
          to: 'expired',
          expectedVersion: 1,
          by: 'dispatch:w2',
          now: clock.now(),
        });
        // Assess
        expect(first.kind).toBe('ok');
        for (const out of [staleVersion, wrongState]) {
          expect(out.kind).toBe('stale');
          if (out.kind === 'stale') expect(out.current).toMatchObject({ state: 'claimed', version: 2 });
        }
        expect(missing).toMatchObject({ kind: 'stale' });
        if (missing.kind === 'stale') expect(missing.current).toBeUndefined();
        expect((await ledger.get(row.pk))?.history.map((h) => h.s)).toEqual(['claimed', 'claimed']);
      });

      it('lets exactly one of eight concurrent writers of one version move the row', async () => {
        // Prepare
        const ledger = await fresh();
        const row = await claimed(ledger);
        // Act
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            ledger.transition({
              pk: row.pk,
              from: 'claimed',
              to: 'dispatching',
              expectedVersion: 1,
              by: `dispatch:w${i}`,
              now: clock.now(),
            }),
          ),
        );
        // Assess
        expect(results.filter((r) => r.kind === 'ok')).toHaveLength(1);
        const stored = await ledger.get(row.pk);
        expect(stored?.version).toBe(2);
        expect(stored?.history).toHaveLength(2);
      });

      it('throws on a transition the state table does not have, and out of every terminal state', async () => {
        // Prepare
        const ledger = await fresh();
        const row = await toUnknown(ledger);
        // Act / Assess
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
        for (const from of TERMINAL_STATES) {
          await expect(
            ledger.transition({
              pk: row.pk,
              from,
              to: 'dispatching',
              expectedVersion: 3,
              by: 'x',
              now: clock.now(),
            }),
          ).rejects.toBeInstanceOf(TransitionRefusedError);
        }
        expect(await ledger.get(row.pk)).toEqual(row);
      });
    });

    describe('leases', () => {
      it('lets exactly one of eight workers take over an expired claimed lease, and none before it expires', async () => {
        // Prepare
        const ledger = await fresh();
        const row = await claimed(ledger, claimRow({ leaseMs: 1_000 }));
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
        // Act
        const early = await takeover(0);
        clock.advance(2_000);
        const racing = await Promise.all(Array.from({ length: 8 }, (_, i) => takeover(i + 1)));
        // Assess
        expect(early.kind).toBe('stale');
        const winners = racing.filter((r) => r.kind === 'ok');
        expect(winners).toHaveLength(1);
        const stored = await ledger.get(row.pk);
        expect(stored?.version).toBe(2);
        expect(stored?.leaseOwner).toBe(winners[0]?.record.leaseOwner);
        expect(stored?.leaseUntil).toBe(clock.now() + 90_000);
        expect(stored?.history.map((h) => h.why)).toEqual(['intent_received', 'lease_takeover']);
      });

      it('turns an expired dispatching lease into unknown (the one rule), never a live one, never claimable again', async () => {
        // Prepare
        const ledger = await fresh();
        const row = claimRow({ leaseMs: 1_000 });
        await claimed(ledger, row);
        const dispatching = await ledger.transition({
          pk: row.pk,
          from: 'claimed',
          to: 'dispatching',
          expectedVersion: 1,
          by: 'dispatch:w1',
          set: { leaseUntil: clock.now() + 1_000, attempts: 1 },
          now: clock.now(),
        });
        if (dispatching.kind !== 'ok') throw new Error('dispatching failed');
        // Act
        const live = await expireDispatchingLease(ledger, dispatching.record, 'sweep:1', clock.now() + 1_000);
        clock.advance(5_000);
        const expired = await expireDispatchingLease(ledger, dispatching.record, 'sweep:1', clock.now());
        const again = await expireDispatchingLease(ledger, dispatching.record, 'reconciler:2', clock.now());
        const reclaim = await ledger.claim(claimRow({ eventId: row.eventId }));
        // Assess
        expect(live.kind).toBe('stale');
        expect(expired.kind).toBe('ok');
        expect(again.kind).toBe('stale');
        expect(reclaim.kind).toBe('conflict');
        const stored = await ledger.get(row.pk);
        expect(stored?.state).toBe('unknown');
        expect(stored?.history.at(-1)).toMatchObject({
          s: 'unknown',
          by: 'sweep:1',
          why: 'dispatching_lease_expired',
        });
        expect(stored?.leaseUntil).toBeUndefined();
        expect((await ledger.listAttention('unknown')).items.map((i) => i.pk)).toEqual([row.pk]);
      });
    });

    describe('attention', () => {
      it('indexes a row in its sharded attention partition only while it is in an attention state', async () => {
        // Prepare
        const ledger = await fresh();
        const row = await toUnknown(ledger);
        // Act
        const quarantined = await ledger.transition({
          pk: row.pk,
          from: 'unknown',
          to: 'quarantined',
          expectedVersion: 3,
          by: 'reconciler:1',
          now: clock.now() + 5,
        });
        const resolved = await ledger.transition({
          pk: row.pk,
          from: 'quarantined',
          to: 'resolved_accepted',
          expectedVersion: 4,
          by: 'operator:ana',
          now: clock.now() + 9,
        });
        // Assess
        const shard = attentionShardOf(row.pk, SHARDS);
        expect(row).toMatchObject({ attn: `unknown#${shard}`, attnAt: clock.now() });
        expect(quarantined.kind === 'ok' && quarantined.record).toMatchObject({
          attn: `quarantined#${shard}`,
          attnAt: clock.now() + 5,
        });
        const stored = await ledger.get(row.pk);
        expect(resolved.kind).toBe('ok');
        expect(stored?.attn).toBeUndefined();
        expect(stored?.attnAt).toBeUndefined();
        for (const state of ['unknown', 'quarantined'] as const)
          expect((await ledger.listAttention(state)).items).toEqual([]);
      });

      it('sorts a retry_wait row by its next attempt and drops the next attempt when it leaves', async () => {
        // Prepare
        const ledger = await fresh();
        const row = claimRow({ initial: { state: 'dispatching', why: 'gates_passed', transport: 'ses' } });
        await claimed(ledger, row);
        // Act
        const waiting = await ledger.transition({
          pk: row.pk,
          from: 'dispatching',
          to: 'retry_wait',
          expectedVersion: 1,
          by: 'dispatch:w1',
          set: { nextAttemptAt: clock.now() + 30_000 },
          now: clock.now(),
        });
        const listed = await ledger.listAttention('retry_wait');
        const again = await ledger.transition({
          pk: row.pk,
          from: 'retry_wait',
          to: 'dispatching',
          expectedVersion: 2,
          by: 'dispatch:w2',
          set: { leaseOwner: 'dispatch:w2', leaseUntil: clock.now() + 90_000, attempts: 2 },
          now: clock.now() + 30_000,
        });
        // Assess
        expect(waiting.kind === 'ok' && waiting.record).toMatchObject({
          attnAt: clock.now() + 30_000,
          nextAttemptAt: clock.now() + 30_000,
        });
        expect(waiting.kind === 'ok' && waiting.record.leaseOwner).toBeUndefined();
        expect(listed.items.map((i) => i.pk)).toEqual([row.pk]);
        expect(again.kind === 'ok' && again.record).toMatchObject({
          state: 'dispatching',
          leaseOwner: 'dispatch:w2',
          attempts: 2,
        });
        const stored = await ledger.get(row.pk);
        expect(stored?.nextAttemptAt).toBeUndefined();
        expect(stored?.attn).toBeUndefined();
      });

      it('drops the due time when a row leaves scheduled or provider_scheduled, as when it leaves retry_wait', async () => {
        // Prepare: one row the ledger holds until sendAt, one the provider holds
        const ledger = await fresh();
        const sendAt = clock.now() + 3_600_000;
        const held = claimRow({ initial: { state: 'scheduled', why: 'scheduled_for:test', dueAt: sendAt } });
        const handed = claimRow({
          initial: { state: 'dispatching', why: 'gates_passed', transport: 'resend' },
        });
        await claimed(ledger, held);
        await claimed(ledger, handed);
        const toProvider = await ledger.transition({
          pk: handed.pk,
          from: 'dispatching',
          to: 'provider_scheduled',
          expectedVersion: 1,
          by: 'dispatch:w1',
          set: { providerMessageId: 'msg-1', nextAttemptAt: sendAt },
          now: clock.now(),
        });
        // Act: the scheduled row is dispatched when due; the provider's is settled after sendAt
        const dispatched = await ledger.transition({
          pk: held.pk,
          from: 'scheduled',
          to: 'dispatching',
          expectedVersion: 1,
          by: 'dispatch:w2',
          set: { leaseOwner: 'dispatch:w2', leaseUntil: sendAt + 90_000, attempts: 1 },
          now: sendAt,
        });
        const settled = await ledger.transition({
          pk: handed.pk,
          from: 'provider_scheduled',
          to: 'accepted',
          expectedVersion: 2,
          by: 'sweep:test',
          now: sendAt + 1_000,
        });
        // Assess
        expect(toProvider.kind === 'ok' && toProvider.record.nextAttemptAt).toBe(sendAt);
        expect(dispatched.kind === 'ok' && dispatched.record.nextAttemptAt).toBeUndefined();
        expect(settled.kind === 'ok' && settled.record.nextAttemptAt).toBeUndefined();
        expect((await ledger.get(held.pk))?.nextAttemptAt).toBeUndefined();
        expect((await ledger.get(handed.pk))?.nextAttemptAt).toBeUndefined();
      });

      it('lists one state oldest first across every shard, page by page, each row once', async () => {
        // Prepare: nine rows enter unknown at increasing times, one is quarantined
        const ledger = await fresh();
        const pks: string[] = [];
        for (let i = 0; i < 9; i++) {
          clock.advance(1_000);
          pks.push((await toUnknown(ledger)).pk);
        }
        const other = await toUnknown(ledger);
        await ledger.transition({
          pk: other.pk,
          from: 'unknown',
          to: 'quarantined',
          expectedVersion: 3,
          by: 'r',
          now: clock.now(),
        });
        // Act
        const pages: string[][] = [];
        let cursor: string | undefined;
        do {
          const page = await ledger.listAttention('unknown', { limit: 2, ...(cursor ? { cursor } : {}) });
          expect(page.items.length).toBeLessThanOrEqual(2);
          pages.push(page.items.map((i) => i.pk));
          cursor = page.cursor;
        } while (cursor);
        const all = await ledger.listAttention('unknown', { limit: 50 });
        // Assess
        expect(new Set(pks.map((pk) => attentionShardOf(pk, SHARDS))).size).toBeGreaterThan(1);
        expect(pages.flat()).toEqual(pks);
        expect(pages.length).toBeGreaterThanOrEqual(5);
        expect(all.items.map((i) => i.pk)).toEqual(pks);
        expect((await ledger.listAttention('quarantined')).items.map((i) => i.pk)).toEqual([other.pk]);
      });

      it('refuses a cursor it did not write', async () => {
        // Prepare
        const ledger = await fresh();
        // Act / Assess
        await expect(ledger.listAttention('unknown', { cursor: 'not-a-cursor' })).rejects.toBeInstanceOf(
          RangeError,
        );
      });
    });

    describe('evidence lookup', () => {
      it('finds a waiting row by its idempotency key, and only a waiting one', async () => {
        // Prepare
        const ledger = await fresh();
        const waiting = await toUnknown(ledger);
        const busy = claimRow({ initial: { state: 'dispatching', why: 'gates_passed', transport: 'ses' } });
        await claimed(ledger, busy);
        // Act
        const hit = await ledger.findWaitingByIdempotencyKey(waiting.idempotencyKey);
        const onlyQuarantined = await ledger.findWaitingByIdempotencyKey(waiting.idempotencyKey, [
          'quarantined',
        ]);
        const notWaiting = await ledger.findWaitingByIdempotencyKey(busy.idempotencyKey);
        const absent = await ledger.findWaitingByIdempotencyKey('0'.repeat(64));
        // Assess
        expect(hit.record).toEqual(waiting);
        expect(onlyQuarantined.record).toBeUndefined();
        expect(notWaiting.record).toBeUndefined();
        expect(absent.record).toBeUndefined();
      });

      it('records a provider event once: a second transition carrying the same event id is refused', async () => {
        // Prepare
        const ledger = await fresh();
        const row = await toUnknown(ledger);
        const quarantine = await ledger.transition({
          pk: row.pk,
          from: 'unknown',
          to: 'quarantined',
          expectedVersion: 3,
          by: 'evidence:ses',
          evidenceId: 'ses:evt-1:Send',
          now: clock.now(),
        });
        // Act
        const repeated = await ledger.transition({
          pk: row.pk,
          from: 'quarantined',
          to: 'accepted',
          expectedVersion: 4,
          by: 'evidence:ses',
          evidenceId: 'ses:evt-1:Send',
          now: clock.now(),
        });
        const next = await ledger.transition({
          pk: row.pk,
          from: 'quarantined',
          to: 'accepted',
          expectedVersion: 4,
          by: 'evidence:ses',
          evidenceId: 'ses:evt-2:Delivery',
          now: clock.now(),
        });
        // Assess
        expect(quarantine.kind).toBe('ok');
        expect(repeated.kind).toBe('stale');
        expect(next.kind).toBe('ok');
        expect((await ledger.get(row.pk))?.evidenceIds).toEqual(['ses:evt-1:Send', 'ses:evt-2:Delivery']);
      });
    });

    describe('operator queries', () => {
      it('finds the rows of one business event, oldest first, and none of another', async () => {
        // Prepare
        const { ledger, queries } = await open();
        const first = await claimed(ledger, claimRow({ eventId: 'evt-a' }));
        clock.advance(1);
        const second = await claimed(
          ledger,
          claimRow({ eventId: 'evt-a', intent: { recipient: { ref: 'player-74', email: 'b@example.com' } } }),
        );
        await claimed(ledger, claimRow({ eventId: 'evt-b' }));
        // Act
        const rows = await queries.findByEvent('evt-a');
        // Assess
        expect(rows.map((r) => r.pk)).toEqual([first.pk, second.pk]);
        expect(rows[0]).toEqual(first);
        expect(await queries.findByEvent('evt-none')).toEqual([]);
      });

      it('summarises every item for counting and lists only the rows that have a state', async () => {
        // Prepare: two rows, a seal and a fallback pointer share the table
        const { ledger, queries } = await open();
        const accepted = await claimed(ledger, claimRow());
        await ledger.transition({
          pk: accepted.pk,
          from: 'claimed',
          to: 'dispatching',
          expectedVersion: 1,
          by: 'w',
          now: clock.now(),
        });
        const waiting = await toUnknown(ledger);
        await ledger.park({
          logicalKey: 'lk-summary',
          rows: [{ channel: 'email', dedupeKey: waiting.pk }],
          fallback: false,
          purpose: 'password-reset',
          tenant: 'acme-games',
          ciphertext: 'c',
          reason: 'retry_wait',
          dueAt: clock.now(),
          createdAt: clock.now(),
          ttl: 1,
        });
        await ledger.openFlow('lk-flow', ['email', 'sms']);
        // Act
        const items = [];
        let cursor: string | undefined;
        do {
          const page = await queries.summaries(cursor);
          items.push(...page.items);
          cursor = page.cursor;
        } while (cursor);
        const rows = await queries.rows();
        // Assess
        // Short keys travel as row labels: their claims write no evidence pointer (lib/ledger/evidencePointer.ts).
        expect(items.map((i) => i.state ?? i.kind).sort()).toEqual([
          'dispatching',
          'flow',
          'seal',
          'unknown',
        ]);
        // The key is projected too: a provider-health item is named by it (`sendproof stats` circuits).
        expect(items.find((i) => i.state === 'unknown')).toEqual({
          pk: waiting.pk,
          state: 'unknown',
          kind: 'delivery',
          createdAt: waiting.createdAt,
          attnAt: waiting.attnAt,
        });
        expect(rows.map((r) => r.pk).sort()).toEqual([accepted.pk, waiting.pk].sort());
        expect(rows.find((r) => r.pk === waiting.pk)).toEqual(waiting);
      });
    });

    describe('fallback flow', () => {
      it('opens one pointer, lets exactly one advance from the active index win, and never past the end', async () => {
        // Prepare
        const ledger = await fresh();
        const key = `t:health-report:report-${counter++}:p`;
        // Act
        const opened = await Promise.all(
          Array.from({ length: 4 }, () => ledger.openFlow(key, ['email', 'sms'])),
        );
        const reopened = await ledger.openFlow(key, ['sms']);
        const advances = await Promise.all(Array.from({ length: 4 }, () => ledger.advanceFlow(key, 0, 1)));
        const staleVersion = await ledger.advanceFlow(key, 1, 1);
        const beyond = await ledger.advanceFlow(key, 1, 2);
        // Assess
        expect(opened).toEqual(
          Array(4).fill({ pk: `flow#${key}`, order: ['email', 'sms'], activeIndex: 0, version: 1 }),
        );
        expect(reopened).toEqual({ pk: `flow#${key}`, order: ['email', 'sms'], activeIndex: 0, version: 1 });
        expect(advances.filter(Boolean)).toEqual([
          { pk: `flow#${key}`, order: ['email', 'sms'], activeIndex: 1, version: 2 },
        ]);
        expect(staleVersion).toBeUndefined();
        expect(beyond).toBeUndefined();
        expect(await ledger.getFlow(key)).toEqual({
          pk: `flow#${key}`,
          order: ['email', 'sms'],
          activeIndex: 1,
          version: 2,
        });
        expect(await ledger.getFlow(`${key}-absent`)).toBeUndefined();
        expect(await ledger.advanceFlow(`${key}-absent`, 0, 1)).toBeUndefined();
      });
    });

    describe('seals', () => {
      const seal = (logicalKey: string, dueAt: number): Omit<SealedIntent, 'pk' | 'kind' | 'resumes'> => ({
        logicalKey,
        rows: [{ channel: 'email', dedupeKey: `${logicalKey}:email` }],
        fallback: false,
        purpose: 'password-reset',
        tenant: 'acme-games',
        ciphertext: `cipher-${logicalKey}`,
        reason: 'retry_wait',
        dueAt,
        createdAt: clock.now(),
        ttl: Math.floor(clock.now() / 1000) + 3600,
      });

      it('parks once, re-arms without replacing the ciphertext, and counts resumes', async () => {
        // Prepare
        const ledger = await fresh();
        const now = clock.now();
        // Act
        await ledger.park(seal('lk-1', now + 1_000));
        const parked = await ledger.getSeal('lk-1');
        await ledger.park({ ...seal('lk-1', now + 5_000), ciphertext: 'other', reason: 'replay' });
        const reparked = await ledger.getSeal('lk-1');
        const resumed = await ledger.rearm('lk-1', now + 9_000, 'last_receive', true);
        const absent = await ledger.rearm('lk-absent', now, 'x', true);
        // Assess
        expect(parked).toEqual({ ...seal('lk-1', now + 1_000), pk: 'seal#lk-1', kind: 'seal', resumes: 0 });
        expect(reparked).toMatchObject({
          ciphertext: 'cipher-lk-1',
          reason: 'replay',
          dueAt: now + 5_000,
          resumes: 0,
        });
        expect(resumed).toBe(true);
        expect(await ledger.getSeal('lk-1')).toMatchObject({
          reason: 'last_receive',
          dueAt: now + 9_000,
          resumes: 1,
        });
        expect(absent).toBe(false);
        expect(await ledger.getSeal('lk-absent')).toBeUndefined();
      });

      it('lists only due seals, earliest first, page by page, and forgets a released one', async () => {
        // Prepare
        const ledger = await fresh();
        const now = clock.now();
        const due = Array.from({ length: 7 }, (_, i) => `due-${i}`);
        for (const [i, key] of [...due].reverse().entries())
          await ledger.park(seal(key, now - 1_000 * (i + 1)));
        await ledger.park(seal('later', now + 60_000));
        // Act
        const keys: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await ledger.listDue(now, { limit: 3, ...(cursor ? { cursor } : {}) });
          expect(page.items.length).toBeLessThanOrEqual(3);
          for (const item of page.items) expect(item).not.toHaveProperty('attn');
          keys.push(...page.items.map((s) => s.logicalKey));
          cursor = page.cursor;
        } while (cursor);
        await ledger.release('due-0');
        const afterRelease = await ledger.listDue(now + 60_000, { limit: 50 });
        // Assess
        expect(keys).toEqual(due);
        expect(afterRelease.items.map((s) => s.logicalKey)).toEqual([...due.slice(1), 'later']);
        expect(await ledger.getSeal('due-0')).toBeUndefined();
        // Seals live beside the rows but are never attention rows.
        expect((await ledger.listAttention('retry_wait')).items).toEqual([]);
      });
    });
    describe('cancel markers and annotations', () => {
      const order = (id: string, at: number): CancelOrder => ({
        id,
        by: 'operator:ana',
        reason: 'refund',
        at,
      });

      it('commits a scope once: a repeat returns the first order; another scope is appended', async () => {
        // Prepare
        const ledger = await fresh();
        // Act
        const first = await ledger.commitCancel('acme', 'pay_1', order('*/*', 1), 99);
        const again = await ledger.commitCancel('acme', 'pay_1', order('*/*', 2), 99);
        const other = await ledger.commitCancel(
          'acme',
          'pay_1',
          { ...order('receipt/*', 3), purpose: 'receipt' },
          99,
        );
        const marker = await ledger.getCancelMarker('acme', 'pay_1');
        // Assess
        expect([first.kind, again.kind, other.kind]).toEqual(['committed', 'exists', 'committed']);
        expect(again.order.at).toBe(1);
        expect(marker?.eventId).toBe('pay_1');
        expect(marker?.orders.map((o) => o.id)).toEqual(['*/*', 'receipt/*']);
        expect(await ledger.getCancelMarker('acme', 'pay_2')).toBeUndefined();
        expect(await ledger.getCancelMarker('other', 'pay_1')).toBeUndefined();
      });

      it('annotates a row in its state (version + 1) and refuses a moved row', async () => {
        // Prepare
        const ledger = await fresh();
        const row = await claimed(ledger);
        // Act
        const ok = await ledger.annotate({
          pk: row.pk,
          state: row.state,
          expectedVersion: 1,
          by: 'operator:ana',
          why: 'cancel_too_late:x',
          now: clock.now(),
        });
        const staleVersion = await ledger.annotate({
          pk: row.pk,
          state: row.state,
          expectedVersion: 1,
          by: 'operator:ana',
          why: 'again',
          now: clock.now(),
        });
        const wrongState = await ledger.annotate({
          pk: row.pk,
          state: 'accepted',
          expectedVersion: 2,
          by: 'operator:ana',
          why: 'again',
          now: clock.now(),
        });
        const after = await ledger.get(row.pk);
        // Assess
        expect([ok, staleVersion, wrongState]).toEqual([true, false, false]);
        expect(after?.version).toBe(2);
        expect(after?.state).toBe(row.state);
        expect(after?.history.map((h) => h.why)).toEqual([row.history[0]!.why, 'cancel_too_late:x']);
      });
    });
  });
};
