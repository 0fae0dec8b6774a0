import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  BUILT_IN_PURPOSES,
  PurposeRegistry,
  RETENTION_FLOOR_DAYS,
  SCHEDULE_HORIZON_DAYS,
} from '../../../lib/domain/purposes.js';
import { localSealer } from '../../../lib/seal/IntentSealer.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { DEFAULT_TEMPLATES_DIR, FileTemplateStore } from '../../../lib/templates/FileTemplateStore.js';
import { createHarness, type Harness, NoticeQueue, sweeperFor } from '../../support/dispatchHarness.js';
import { receiptIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1. Each
// case schedules a receipt, then breaks what its due dispatch needs before sendAt (issue 26 item 1): the
// row must not stay `scheduled` for ever with nothing that finds it again.
let sim: RunningProviderSimulator;
let h: Harness;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}`, receiveCount: 1 });
const MIN = 60_000;
const MAX_RESUMES = 5;

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
});
afterAll(async () => {
  await sim.stop();
});
beforeEach(() => {
  sim.reset();
  clock.set(Date.now());
});

/** A receipt scheduled 10 minutes ahead, claimed `scheduled` and sealed; returns its row key. */
const schedule = async (eventId: string, renderer?: FileTemplateStore) => {
  const body = JSON.stringify(
    receiptIntent({ eventId, sendAt: new Date(clock.now() + 10 * MIN).toISOString() }),
  );
  const out = await h.dispatcher(renderer ? { renderer } : {}).handle(body, envelope());
  expect(out.channels[0]?.state).toBe('scheduled');
  return out.channels[0]!.dedupeKey;
};

describe('a due scheduled row that cannot move ends blocked or stalled with the reason', () => {
  it('its template revision was removed before sendAt: the resumed row is blocked (render_failed), and its seal released', async () => {
    // Prepare: the dispatcher renders from a copy of the templates; receipt v4 disappears after the claim
    const dir = mkdtempSync(join(tmpdir(), 'sendproof-templates-'));
    cpSync(DEFAULT_TEMPLATES_DIR, dir, { recursive: true });
    const pk = await schedule('pay_stranded-render', new FileTemplateStore(dir));
    rmSync(join(dir, 'receipt', 'v4'), { recursive: true });
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices);
    // Act: due; the sweep resumes it; the dispatcher cannot render it; the sweep looks again
    clock.advance(10 * MIN);
    await sweeper.sweep();
    const [resumed] = await notices.deliver(h.dispatcher({ renderer: new FileTemplateStore(dir) }));
    clock.advance(2 * MIN);
    const after = await sweeper.sweep();
    // Assess
    expect(resumed?.channels[0]).toMatchObject({ state: 'blocked', action: 'render_failed' });
    const row = await h.ledger.get(pk);
    expect(row?.state).toBe('blocked');
    expect(row?.history.at(-1)?.why).toBe('render_failed:unknown_revision');
    expect(row?.ttl).toBeGreaterThan(clock.now() / 1000);
    expect(after.released).toBe(1);
    expect(await h.ledger.getSeal(row!.logicalKey)).toBeUndefined();
    expect(sim.requests()).toHaveLength(0);
  });

  it('the content-hash key was rotated before sendAt: the resumed row is blocked (content_mismatch), not left scheduled', async () => {
    // Prepare
    const pk = await schedule('pay_stranded-hash');
    const notices = new NoticeQueue();
    // Act
    clock.advance(10 * MIN);
    await sweeperFor(h, clock, notices).sweep();
    const [resumed] = await notices.deliver(
      h.dispatcher({ contentHashKey: 'rotated-content-hash-key-9876543210' }),
    );
    // Assess
    expect(resumed?.channels[0]).toMatchObject({ state: 'blocked', action: 'content_mismatch_blocked' });
    const row = await h.ledger.get(pk);
    expect(row?.state).toBe('blocked');
    expect(row?.history.at(-1)?.why).toBe('content_mismatch:sealed_intent');
    expect(sim.requests()).toHaveLength(0);
  });

  it('the seal no longer decrypts: each resume is acknowledged, and at the resume limit the row is stalled with that reason', async () => {
    // Prepare: the dispatchers now hold another seal key
    const pk = await schedule('pay_stranded-seal');
    const notices = new NoticeQueue();
    const sweeper = sweeperFor(h, clock, notices);
    const otherKey = localSealer(Buffer.from('another-seal-key-of-32-bytes-abc', 'utf8'));
    // Act: due; every resume fails to open the seal, until the sweep gives up
    clock.advance(10 * MIN);
    const outcomes = [];
    for (let run = 0; run <= MAX_RESUMES; run++) {
      await sweeper.sweep();
      outcomes.push(...(await notices.deliver(h.dispatcher({ sealer: otherKey }))));
      clock.advance(MIN + 1);
    }
    const last = await sweeper.sweep();
    // Assess
    expect(outcomes).toHaveLength(MAX_RESUMES);
    expect(outcomes.every((o) => o.disposition === 'done' && o.channels.length === 0)).toBe(true);
    const row = await h.ledger.get(pk);
    expect(row?.state).toBe('stalled');
    expect(row?.history.at(-1)?.why).toBe('resume_limit_reached:seal_unreadable');
    expect((await h.ledger.listAttention('stalled')).items.map((r) => r.pk)).toContain(pk);
    expect(last.resumed).toBe(0);
    expect(sim.requests()).toHaveLength(0);
  });

  it('resume notices that never arrive: at the resume limit the scheduled row is stalled, never left scheduled', async () => {
    // Prepare
    const pk = await schedule('pay_stranded-lost');
    const sweeper = sweeperFor(h, clock, new NoticeQueue());
    // Act: the sweep resumes it every period; nothing ever handles the notices
    clock.advance(10 * MIN);
    let stalled = 0;
    for (let run = 0; run <= MAX_RESUMES; run++) {
      stalled += (await sweeper.sweep()).stalled;
      clock.advance(MIN + 1);
    }
    // Assess
    const row = await h.ledger.get(pk);
    expect(row?.state).toBe('stalled');
    expect(row?.history.at(-1)?.why).toBe('resume_limit_reached');
    expect(stalled).toBe(1);
  });
});

describe("a scheduled notification's seal outlives its due time", () => {
  it('is kept for the retention counted from sendAt, so a send due at the horizon still has its seal then', async () => {
    // Prepare: a purpose at the retention floor, a receipt scheduled one minute inside the horizon
    const purposes = PurposeRegistry.withOverrides([
      { ...BUILT_IN_PURPOSES[1]!, retentionDays: RETENTION_FLOOR_DAYS },
    ]);
    const sendAt = clock.now() + SCHEDULE_HORIZON_DAYS * 86_400_000 - MIN;
    const body = JSON.stringify(
      receiptIntent({ eventId: 'pay_horizon-seal', sendAt: new Date(sendAt).toISOString() }),
    );
    // Act
    const out = await h.dispatcher({ purposes }).handle(body, envelope());
    const row = await h.ledger.get(out.channels[0]!.dedupeKey);
    const seal = await h.ledger.getSeal(row!.logicalKey);
    // Assess: due at sendAt, and kept a whole retention beyond it (not a minute)
    expect(seal?.dueAt).toBe(sendAt);
    expect(seal?.ttl).toBe(Math.floor((sendAt + RETENTION_FLOOR_DAYS * 86_400_000) / 1000));
  });
});
