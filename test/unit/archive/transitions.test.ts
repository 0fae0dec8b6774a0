import { describe, expect, it } from 'vitest';
import { batchObjectKey, partitionDate, partitionOfKey } from '../../../lib/archive/objectKey.js';
import { ARCHIVE_COLUMNS, duckDbColumnsLiteral } from '../../../lib/archive/schema.js';
import { isTtlDeletion, transitionsOf } from '../../../lib/archive/transitions.js';
import { at, notificationRecords, removeRecord, streamRecord } from '../../fixtures/archive/streamRecords.js';

const n = { eventId: 'evt-9', recipientRef: 'user-9', channel: 'sms' as const };
const t0 = at('2026-11-30T10:00:00Z');

describe('transitions derived from ledger stream images', () => {
  it('each stream record yields exactly the transitions its version change adds, with the from-state of the previous entry', () => {
    // Prepare
    const records = notificationRecords(n, [
      { s: 'claimed', at: t0, by: 'dispatch:a' },
      { s: 'dispatching', at: t0 + 10, by: 'dispatch:a', n: 1, set: { transport: 'sms-v2', attempts: 1 } },
      { s: 'retry_wait', at: t0 + 20, by: 'dispatch:a', why: 'throttled', n: 1 },
    ]);

    // Act
    const perRecord = records.map((r) => transitionsOf(r).map((l) => [l.version, l.from_state, l.to_state]));

    // Assess
    expect(perRecord).toEqual([
      [[1, null, 'claimed']],
      [[2, 'claimed', 'dispatching']],
      [[3, 'dispatching', 'retry_wait']],
    ]);
  });

  it('a MODIFY that jumps several versions archives every skipped transition once', () => {
    // Prepare: the old image is two versions behind the new one.
    const records = notificationRecords(n, [
      { s: 'claimed', at: t0, by: 'dispatch:a' },
      { s: 'dispatching', at: t0 + 10, by: 'dispatch:a' },
      { s: 'accepted', at: t0 + 20, by: 'dispatch:a', msg: 'm-1', set: { providerMessageId: 'm-1' } },
    ]);
    const jump = streamRecord({ eventName: 'MODIFY' });
    jump.dynamodb!.OldImage = records[0]!.dynamodb!.NewImage;
    jump.dynamodb!.NewImage = records[2]!.dynamodb!.NewImage;

    // Act
    const lines = transitionsOf(jump);

    // Assess
    expect(lines.map((l) => [l.version, l.to_state, l.transport_message_id])).toEqual([
      [2, 'dispatching', null],
      [3, 'accepted', 'm-1'],
    ]);
  });

  it('takes the transport message id from the row when the transition that set it carries none', () => {
    // Prepare: an adapter that set providerMessageId without `msg` on the entry.
    const [, accepted] = notificationRecords(n, [
      { s: 'claimed', at: t0, by: 'dispatch:a' },
      { s: 'dispatching', at: t0 + 10, by: 'dispatch:a', set: { providerMessageId: 'sms-77' } },
    ]);

    // Act
    const [line] = transitionsOf(accepted!);

    // Assess
    expect(line).toMatchObject({ to_state: 'dispatching', transport_message_id: 'sms-77' });
  });

  it('REMOVE records yield nothing and a TTL deletion is recognised by the DynamoDB service identity', () => {
    // Prepare
    const rows = notificationRecords(n, [{ s: 'claimed', at: t0, by: 'dispatch:a' }]);
    const ttl = removeRecord(rows, true);
    const ordinary = removeRecord(rows, false);

    // Act & Assess
    expect([transitionsOf(ttl), transitionsOf(ordinary)]).toEqual([[], []]);
    expect([isTtlDeletion(ttl), isTtlDeletion(ordinary)]).toEqual([true, false]);
  });

  it('a row whose history length disagrees with its version is refused, not silently dropped', () => {
    // Prepare
    const [insert] = notificationRecords(n, [{ s: 'claimed', at: t0, by: 'dispatch:a' }]);
    insert!.dynamodb!.NewImage!.version = { N: '2' };

    // Act & Assess
    expect(() => transitionsOf(insert!)).toThrow(/version 2 but 1 history entries/);
  });
});

describe('archive object keys and schema', () => {
  it('keys are per stream batch and partition (tenant, transition date), deterministic, in stream order', () => {
    // Act
    const partition = { tenant: 'acme', date: partitionDate(at('2026-11-30T23:59:59.999Z')) };
    const first = batchObjectKey(partition, '900', '1200');
    const again = batchObjectKey(partition, '900', '1200');
    const later = batchObjectKey(partition, '10000', '10400');

    // Assess
    expect(first).toBe(
      `transitions/tenant=acme/dt=2026-11-30/${'0'.repeat(37)}900-${'0'.repeat(36)}1200.jsonl.gz`,
    );
    expect(again).toBe(first);
    expect([later, first].sort()).toEqual([first, later]);
    expect(partitionOfKey(first)).toEqual(partition);
    expect(() => batchObjectKey(partition, '12/../x', '13')).toThrow();
    expect(() => batchObjectKey({ tenant: '../x', date: '2026-11-30' }, '1', '2')).toThrow();
    expect(() => batchObjectKey({ tenant: 'acme', date: '2026-13' }, '1', '2')).toThrow();
  });

  it('columns are unique snake_case names and DuckDB gets the same list with mapped types', () => {
    // Act
    const names = ARCHIVE_COLUMNS.map((c) => c.name);
    const literal = duckDbColumnsLiteral();

    // Assess
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[a-z][a-z0-9_]*$/);
    expect(literal).toContain("'transition_at_ms': 'BIGINT'");
    expect(literal).toContain("'version': 'INTEGER'");
    expect(literal.match(/': '/g)).toHaveLength(names.length);
  });
});
