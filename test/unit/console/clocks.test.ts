import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { describeArchived, describeTimeline } from '../../../cli/commands/explain.js';
import { orderedByLedger, timelineFrom } from '../../../lib/archive/bundle.js';
import { DirStore } from '../../../lib/archive/store.js';
import { clockedTimeline } from '../../../lib/console/clocks.js';
import type { DeliveryFactEntry } from '../../../lib/evidence/facts.js';
import type { DeliveryRecord, TransitionEntry } from '../../../lib/ledger/port.js';
import { demoTimeline } from '../../../lib/local/demo.js';
import { archiveRows } from '../../support/consoleArchive.js';

// Whose clock each time is. The ledger stamps its transitions; a provider stamps its events with its own
// clock. Two rows as the demo really produces them (README, `npm start`):
// - a fast provider: the simulator delivered 5 ms (its clock) before the ledger stamped `accepted`;
// - a lost answer: the provider took and delivered the SMS; its answer was dropped, the row went
//   `unknown`, and the ledger learned of the acceptance 1.5 s later from a replay.
const T = Date.parse('2026-12-01T12:27:27.000Z');
const base = (pk: string, history: TransitionEntry[], facts: DeliveryFactEntry[]): DeliveryRecord => ({
  pk,
  kind: 'delivery',
  idempotencyKey: `ik-${pk}`,
  state: history.at(-1)!.s,
  version: history.length,
  tenant: 'acme-games',
  purpose: 'password-reset',
  eventId: pk.split(':')[1]!,
  recipientRef: 'player-88',
  channel: 'sms',
  logicalKey: `lk-${pk}`,
  contentHash: 'h1:x',
  policyVersion: 'p1',
  templateId: 'password-reset',
  templateRevision: 'v1',
  templateOwner: 'application',
  transport: 'rest',
  providerMessageId: 'sim_1',
  attempts: 1,
  createdAt: history[0]!.at,
  updatedAt: history.at(-1)!.at,
  history,
  ...(facts.length
    ? {
        delivery: {
          status: facts.at(-1)!.f,
          at: facts.at(-1)!.at,
          why: facts.at(-1)!.why,
          h: facts,
          n: facts.length,
        },
      }
    : {}),
});
const fact = (f: DeliveryFactEntry['f'], at: number): DeliveryFactEntry => ({
  f,
  at,
  by: 'evidence:rest',
  why: `rest:${f}`,
  id: `rest:sim_1:${f}`,
  msg: 'sim_1',
});

const fast = base(
  'acme-games:rst_fast:password-reset:sms:player-88',
  [
    { s: 'claimed', at: T, by: 'dispatch:a' },
    { s: 'dispatching', at: T + 20, by: 'dispatch:a', why: 'lease_acquired' },
    { s: 'accepted', at: T + 843, by: 'dispatch:a', why: 'provider_accepted', msg: 'sim_1' },
  ],
  [fact('sent', T + 835), fact('delivered', T + 838)],
);
const lost = base(
  'acme-games:rst_8a02:password-reset:sms:player-88',
  [
    { s: 'claimed', at: T, by: 'dispatch:a' },
    { s: 'dispatching', at: T + 20, by: 'dispatch:a', why: 'lease_acquired' },
    { s: 'unknown', at: T + 70, by: 'dispatch:a', why: 'provider_answer_lost' },
    { s: 'accepted', at: T + 1_983, by: 'dispatch:b', why: 'replay_accepted', msg: 'sim_1' },
  ],
  [fact('delivered', T + 522)],
);

describe('a timeline says whose clock each time is and never shows a delivery before its acceptance', () => {
  it('orders the provider facts after the acceptance they were recorded after, with how much earlier the provider clock reads', () => {
    // Act
    const entries = clockedTimeline(lost);
    // Assess
    expect(entries.map((e) => [e.what, e.clock])).toEqual([
      ['claimed', 'ledger'],
      ['dispatching', 'ledger'],
      ['unknown', 'ledger'],
      ['accepted', 'ledger'],
      ['delivered', 'provider'],
    ]);
    expect(entries[4]).toMatchObject({
      recordedAfter: { what: 'accepted', at: T + 1_983 },
      providerEarlierByMs: 1_461,
    });
    expect(
      clockedTimeline(fast)
        .filter((e) => e.kind === 'fact')
        .map((e) => e.providerEarlierByMs),
    ).toEqual([8, 5]);
  });

  it('places a fact that settled an unknown row right after its settling transition', () => {
    const settled = base(
      'acme-games:rst_ev:password-reset:email:player-88',
      [
        { s: 'claimed', at: T, by: 'dispatch:a' },
        { s: 'dispatching', at: T + 20, by: 'dispatch:a' },
        { s: 'unknown', at: T + 70, by: 'dispatch:a', why: 'provider_timeout_after_send' },
        { s: 'accepted', at: T + 9_000, by: 'evidence:ses', why: 'ses:Delivery' },
        { s: 'accepted', at: T + 9_500, by: 'operator:ana', why: 'cancel_too_late:*/*' },
      ],
      [{ f: 'delivered', at: T + 400, by: 'evidence:ses', why: 'ses:Delivery', id: 'ses:1:Delivery' }],
    );
    const entries = clockedTimeline(settled);
    expect(entries.map((e) => `${e.what}:${e.clock}`)).toEqual([
      'claimed:ledger',
      'dispatching:ledger',
      'unknown:ledger',
      'accepted:ledger',
      'delivered:provider',
      'accepted:ledger',
    ]);
    expect(entries[4]?.recordedAfter?.at).toBe(T + 9_000);
  });

  it("the demo's line names both clocks and says a provider time is earlier rather than printing delivery before acceptance", () => {
    // Act
    const line = demoTimeline(lost);
    // Assess: each time is followed by its clock; the earlier provider time is explained
    expect(line).toBe(
      'accepted by rest at 2026-12-01T12:27:28.983Z (ledger clock; msg sim_1) · delivered at 2026-12-01T12:27:27.522Z ' +
        '(provider clock; rest:delivered; 1.461 s before the ledger recorded accepted)',
    );
    for (const time of line.match(/\d{4}-\d\d-\d\dT[\d:.]+Z/g) ?? [])
      expect(line.slice(line.indexOf(time) + time.length)).toMatch(/^ \((ledger|provider) clock/);
    expect(demoTimeline(fast)).toContain(
      'sent at 2026-12-01T12:27:27.835Z (provider clock; rest:sent; 8 ms before the ledger recorded accepted)',
    );
  });

  it('`sendproof explain` prints the row timeline with clocks, and the archived lines in the ledger order', async () => {
    // Prepare: the archive of the lost-answer row, as the archiver writes it
    const dir = await mkdtemp(join(tmpdir(), 'sendproof-clocks-'));
    try {
      const store = new DirStore(dir);
      const keys = await archiveRows(store, [lost]);
      const lines = (
        await Promise.all(keys.map(async (k) => gunzipSync((await store.get(k))!).toString('utf8')))
      )
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      // Act
      const printed = describeArchived(lines);
      const timeline = describeTimeline(lost);
      // Assess
      expect(printed.map((l) => /→ (\S+)/.exec(l)?.[1])).toEqual([
        'claimed',
        'dispatching',
        'unknown',
        'accepted',
        'delivery:delivered',
      ]);
      expect(printed.at(-1)).toMatch(/^ {2}2026-12-01T12:27:27\.522Z provider /);
      expect(printed.at(-1)).toContain(
        '[1.461 s before the ledger recorded v4; two clocks, recorded after it]',
      );
      expect(printed[3]).toMatch(/^ {2}2026-12-01T12:27:28\.983Z ledger {3}/);
      expect(timeline.split('\n').at(-1)).toContain(
        'delivered at 2026-12-01T12:27:27.522Z provider clock by evidence:rest',
      );
      expect(timeline.split('\n').at(-1)).toContain(
        '1.461 s before the ledger recorded accepted at 2026-12-01T12:27:28.983Z (two clocks; recorded after it)',
      );

      // The export bundle's timeline: the ledger's order with each line's clock (version 2); the
      // version-1 order (time across both clocks) put the delivery first.
      const objects = await Promise.all(keys.map(async (key) => ({ key, bytes: (await store.get(key))! })));
      const v2 = timelineFrom(objects, lost.pk).rows;
      expect(v2.map((r) => [r.to_state, r.clock])).toEqual([
        ['claimed', 'ledger'],
        ['dispatching', 'ledger'],
        ['unknown', 'ledger'],
        ['accepted', 'ledger'],
        ['delivery:delivered', 'provider'],
      ]);
      expect(v2.at(-1)?.ledger_at).toBe('2026-12-01T12:27:28.983Z');
      expect(
        timelineFrom(objects, lost.pk, 1)
          .rows.map((r) => r.to_state)
          .indexOf('delivery:delivered'),
      ).toBe(3);
      expect(orderedByLedger(lines).map((r) => r.ledger_at_ms)).toEqual(
        [...orderedByLedger(lines).map((r) => r.ledger_at_ms)].sort((a, b) => a - b),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
