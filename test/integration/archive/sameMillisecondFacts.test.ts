import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toJsonLine } from '../../../lib/archive/archiver.js';
import { timelineFrom } from '../../../lib/archive/bundle.js';
import { DuckDbAudit } from '../../../lib/archive/DuckDbAudit.js';
import { loadNamedQueries } from '../../../lib/archive/namedQueries.js';
import { batchObjectKey } from '../../../lib/archive/objectKey.js';
import { transitionsOf } from '../../../lib/archive/transitions.js';
import { streamRecord } from '../../fixtures/archive/streamRecords.js';

// Seen on a local run: the simulator's pull feed reported `sent` and `delivered` for one SMS in the same
// millisecond. Both facts reached the archive, but the one-copy-per-transition rule counted them as two
// copies of one line (same dedupe key, version and time), so `delivered` vanished from every query and
// `accepted-not-delivered` listed a delivered message. A fact is told apart by what it says, too.
const KEY = 'acme-games:password-reset:rst_1:player-1:sms';
const T = Date.parse('2026-12-01T10:00:00Z');
let dir: string;
let audit: DuckDbAudit;
const objects: Array<{ key: string; bytes: Buffer }> = [];

const row = (delivery?: unknown) => ({
  pk: KEY,
  kind: 'delivery',
  state: 'accepted',
  version: 2,
  tenant: 'acme-games',
  purpose: 'password-reset',
  eventId: 'rst_1',
  recipientRef: 'player-1',
  channel: 'sms',
  idempotencyKey: 'a'.repeat(64),
  transport: 'rest',
  providerMessageId: 'sim-1',
  history: [
    { s: 'dispatching', at: T, by: 'dispatch:w1', why: 'gates_passed', n: 1 },
    { s: 'accepted', at: T + 100, by: 'dispatch:w1', why: 'provider_accepted', msg: 'sim-1' },
  ],
  ...(delivery ? { delivery } : {}),
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sendproof-same-ms-'));
  const insert = streamRecord({ eventName: 'INSERT', newImage: row() });
  const facts = {
    n: 2,
    h: [
      { f: 'sent', at: T + 500, by: 'evidence:rest', why: 'rest:sent', msg: 'sim-1' },
      { f: 'delivered', at: T + 500, by: 'evidence:rest', why: 'rest:delivered', msg: 'sim-1' },
    ],
  };
  const modify = streamRecord({ eventName: 'MODIFY', oldImage: row(), newImage: row(facts) });
  for (const record of [insert, modify]) {
    const sequence = record.dynamodb!.SequenceNumber!;
    const key = batchObjectKey({ tenant: 'acme-games', date: '2026-12-01' }, sequence, sequence);
    const bytes = gzipSync(`${transitionsOf(record).map(toJsonLine).join('\n')}\n`);
    objects.push({ key, bytes });
    await mkdir(dirname(join(dir, key)), { recursive: true });
    await writeFile(join(dir, key), bytes);
  }
  audit = await DuckDbAudit.open(dir);
});
afterAll(async () => {
  audit?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('two provider facts in the same millisecond', () => {
  const query = (name: string) => loadNamedQueries().find((q) => q.name === name)!;
  const DAYS = ['acme-games', '2026-12-01', '2026-12-01'];

  it('are both in the timeline, and a delivered message is not listed as accepted-not-delivered', async () => {
    // Act
    const explained = await audit.runNamed(query('explain-notification'), [...DAYS, KEY]);
    const missing = await audit.runNamed(query('accepted-not-delivered'), [...DAYS, String(T + 3_600_000)]);
    const bundle = timelineFrom(objects, KEY);
    // Assess
    // (two facts of one millisecond have no order between them)
    expect(explained.rows.map((r) => r.to_state).sort()).toEqual([
      'accepted',
      'delivery:delivered',
      'delivery:sent',
      'dispatching',
    ]);
    expect(missing.rows).toEqual([]);
    expect(bundle.rows.map((r) => r.to_state).sort()).toEqual(explained.rows.map((r) => r.to_state).sort());
  });

  it('a second copy of the same fact (a regrouped stream retry) is still counted once', async () => {
    // Prepare: the MODIFY's object stored again under another batch key
    const copy = await mkdtemp(join(tmpdir(), 'sendproof-same-ms-copy-'));
    for (const [i, object] of objects.entries()) {
      const key = i === 1 ? object.key.replace('.jsonl.gz', '-x.jsonl.gz') : object.key;
      for (const k of i === 1 ? [object.key, key] : [key]) {
        await mkdir(dirname(join(copy, k)), { recursive: true });
        await writeFile(join(copy, k), object.bytes);
      }
    }
    const twice = await DuckDbAudit.open(copy);
    // Act
    const explained = await twice.runNamed(query('explain-notification'), [...DAYS, KEY]);
    twice.close();
    await rm(copy, { recursive: true, force: true });
    // Assess
    // (two facts of one millisecond have no order between them)
    expect(explained.rows.map((r) => r.to_state).sort()).toEqual([
      'accepted',
      'delivery:delivered',
      'delivery:sent',
      'dispatching',
    ]);
  });
});
