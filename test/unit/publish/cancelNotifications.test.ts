import { describe, expect, it } from 'vitest';
import { MemoryLedger } from '../../../lib/ledger/MemoryLedger.js';
import { CancelRefusedError, cancelNotifications } from '../../../lib/publish/cancelNotifications.js';
import { ManualClock } from '../../support/manualClock.js';

describe('cancelNotifications refused at the boundary', () => {
  it('without dedupe keys and without an operator-queries port it is refused before any marker is written', async () => {
    // Prepare
    const ledger = new MemoryLedger();
    const clock = new ManualClock(Date.parse('2026-12-01T10:00:00Z'));
    // Act
    const attempt = cancelNotifications(
      { ledger, clock },
      { tenant: 'acme-games', eventId: 'pay_1', reason: 'payment refunded', operator: 'ana' },
    );
    // Assess
    await expect(attempt).rejects.toBeInstanceOf(CancelRefusedError);
    await expect(attempt).rejects.toThrow(/dedupeKeys/);
    expect(await ledger.getCancelMarker('acme-games', 'pay_1')).toBeUndefined();
  });

  it('with the operator-queries port the marker is committed and the event is visited', async () => {
    // Prepare
    const ledger = new MemoryLedger();
    const clock = new ManualClock(Date.parse('2026-12-01T10:00:00Z'));
    // Act
    const report = await cancelNotifications(
      { ledger, queries: ledger, clock },
      { tenant: 'acme-games', eventId: 'pay_1', reason: 'payment refunded', operator: 'ana' },
    );
    // Assess
    expect(report.committed).toBe(true);
    expect(report.rows).toEqual([]);
    expect((await ledger.getCancelMarker('acme-games', 'pay_1'))?.orders).toHaveLength(1);
  });
});
