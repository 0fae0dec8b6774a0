import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toJsonLine } from '../../../lib/archive/archiver.js';
import { DuckDbAudit } from '../../../lib/archive/DuckDbAudit.js';
import { loadNamedQueries } from '../../../lib/archive/namedQueries.js';
import { batchObjectKey, partitionDate } from '../../../lib/archive/objectKey.js';
import { transitionsOf } from '../../../lib/archive/transitions.js';
import { cancelNotifications } from '../../../lib/publish/cancelNotifications.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import type { Transport } from '../../../lib/transports/port.js';
import { streamRecord } from '../../fixtures/archive/streamRecords.js';
import { createHarness, type Harness } from '../../support/dispatchHarness.js';
import { MARKERS, receiptIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// A real run on DynamoDB Local and the provider simulator: a scheduled receipt refunded before it was
// due, a fan-out recipient dispatched after the cancel committed, and a receipt already handed to an
// SES-style adapter. Their rows become the archive (the archiver's own derivation and line format),
// and the `cancellations` query runs on DuckDB exactly as written in queries/.
let sim: RunningProviderSimulator;
let h: Harness;
let dir: string;
let audit: DuckDbAudit;
const clock = new ManualClock(Date.parse('2026-12-01T10:00:00Z'));
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}`, receiveCount: 1 });

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
  dir = await mkdtemp(join(tmpdir(), 'sendproof-cancellations-'));
});
afterAll(async () => {
  audit?.close();
  await sim.stop();
  await rm(dir, { recursive: true, force: true });
});

const sesStyle = (): Transport => ({
  name: 'ses',
  channel: 'email',
  capabilities: {
    ...h.transports.email.capabilities,
    idempotencyKey: false,
    keyRetentionSeconds: 0,
    cancel: false,
  },
  send: (m, k) => h.transports.email.send(m, k),
});

describe('the cancellations named query on DuckDB', () => {
  it('shows who cancelled what and when, how each send was stopped, and the cancel that came too late with its handoff time', async () => {
    // Prepare: the run
    const transports = { email: sesStyle(), sms: h.transports.sms };
    const d = h.dispatcher({ transports });
    const scheduled = receiptIntent({
      eventId: 'pay_q1',
      recipient: { ref: 'player-1', email: MARKERS.email, phone: MARKERS.phone },
      channels: ['email', 'sms'],
      sendAt: new Date(clock.now() + 3_600_000).toISOString(),
    });
    await d.handle(JSON.stringify(scheduled), envelope());
    await d.handle(JSON.stringify(receiptIntent({ eventId: 'pay_q2' })), envelope());
    clock.advance(60_000);
    const ana = { tenant: 'acme-games', reason: 'payment refunded', operator: 'ana' };
    await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock, transports },
      { ...ana, eventId: 'pay_q1' },
    );
    await cancelNotifications(
      { ledger: h.ledger, queries: h.queries, clock, transports },
      { ...ana, eventId: 'pay_q2' },
    );
    clock.advance(1_000);
    // The fan-out's late recipient: claimed after the cancel, stopped by its own marker read.
    await d.handle(
      JSON.stringify(
        receiptIntent({ eventId: 'pay_q1', recipient: { ref: 'player-2', email: MARKERS.email } }),
      ),
      envelope(),
    );
    // The archive of those rows, as the archiver writes it
    const rows = [...(await h.queries.findByEvent('pay_q1')), ...(await h.queries.findByEvent('pay_q2'))];
    for (const row of rows) {
      const record = streamRecord({ eventName: 'INSERT', newImage: { ...row } });
      const lines = transitionsOf(record);
      const date = partitionDate(lines[0]!.transition_at_ms!);
      const sequence = record.dynamodb!.SequenceNumber!;
      const path = join(dir, batchObjectKey({ tenant: row.tenant, date }, sequence, sequence));
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, gzipSync(`${lines.map(toJsonLine).join('\n')}\n`));
    }
    audit = await DuckDbAudit.open(dir);
    const query = loadNamedQueries().find((q) => q.name === 'cancellations')!;
    // Act
    const { rows: found } = await audit.runNamed(query, ['acme-games', '2026-12-01', '2026-12-01']);
    const none = await audit.runNamed(query, ['acme-games', '2026-11-29', '2026-11-30']);
    // Assess
    expect(
      found.map((r) => [
        r.event_id,
        r.recipient_ref,
        r.channel,
        r.from_state,
        r.outcome,
        r.cancelled_by,
        r.how,
      ]),
    ).toEqual([
      ['pay_q1', 'player-1', 'email', 'scheduled', 'stopped', 'operator:ana', 'row_cancelled'],
      ['pay_q1', 'player-1', 'sms', 'scheduled', 'stopped', 'operator:ana', 'row_cancelled'],
      ['pay_q2', 'player-73', 'email', 'accepted', 'too_late', 'operator:ana', 'cancel_too_late'],
      ['pay_q1', 'player-2', 'email', 'dispatching', 'stopped', 'operator:ana', 'marker_read_before_send'],
    ]);
    expect(found.map((r) => r.cancel_scope)).toEqual(['*/*', '*/*', '*/*', '*/*']);
    expect(found[2]?.handed_off_at).toBe('2026-12-01T10:00:00.000Z');
    expect(found[3]?.actor).toBe('dispatch:test');
    expect(found.filter((r) => r.handed_off_at !== null)).toHaveLength(1);
    expect(none.rows).toEqual([]);
  });
});
