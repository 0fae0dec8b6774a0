import { describe, expect, it } from 'vitest';
import { circuitLine, ledgerStats } from '../../../cli/commands/stats.js';
import { circuitEntry } from '../../../lib/console/circuitsPanel.js';
import type { ItemSummary } from '../../../lib/ledger/operatorQueries.js';

describe('sendproof stats', () => {
  it('does not count provider health or breaker items as rows (circuits are read by key, not from the scan)', async () => {
    // Prepare: one scan page as DynamoOperatorQueries.summaries projects it.
    const items: ItemSummary[] = [
      { state: 'accepted', kind: 'delivery', createdAt: 1_000 },
      { state: 'unknown', kind: 'delivery', createdAt: 1_000 },
      {
        state: 'open',
        kind: 'provider_health',
        pk: 'health#ses',
        failures: 5,
        openUntil: 70_000,
        reason: 'failures:5/60s',
      },
      { state: 'closed', kind: 'provider_health', pk: 'health#sendgrid', failures: 1 },
      { state: 'closed', kind: 'breaker' } as ItemSummary,
    ];
    // Act
    const stats = await ledgerStats({ summaries: async () => ({ items }) }, 11_000);
    // Assess
    expect(stats.rows).toBe(2);
    expect(stats.byState).toEqual({ accepted: 1, unknown: 1 });
    expect(Object.keys(stats).sort()).toEqual(['byState', 'oldestWaitingSeconds', 'rows', 'sealed']);
  });

  it('prints each circuit with its place in the failover order, the reason in words and who changed it', () => {
    // Prepare: the entry the console's panel shows too (lib/console/circuitsPanel.ts).
    const at = Date.parse('2026-12-02T12:00:00Z');
    const entry = circuitEntry(
      {
        provider: 'ses',
        state: 'open',
        failures: 3,
        openUntil: at + 60_000,
        reason: 'failures:3/60s',
        version: 1,
        history: [{ s: 'circuit_open', at, by: 'dispatch:w1', why: 'failures:3/60s' }],
      },
      1,
      60,
      at + 10_000,
    );
    const closed = circuitEntry(
      { provider: 'rest', state: 'closed', failures: 0, version: 0, history: [] },
      2,
      60,
      at,
    );
    // Act / Assess
    expect(circuitLine({ channel: 'email', ...entry })).toBe(
      'circuit email #1 ses: open until 2026-12-02T12:01:00.000Z — 3 provider failures in 60 s (5xx answers or requests that never left) (failures:3/60s); changed 2026-12-02T12:00:00.000Z by dispatch:w1',
    );
    expect(circuitLine({ channel: 'email', ...closed })).toBe(
      'circuit email #2 rest: closed (0 failures in the current 60 s window)',
    );
  });
});
