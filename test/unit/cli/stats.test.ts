import { describe, expect, it } from 'vitest';
import { ledgerStats } from '../../../cli/commands/stats.js';
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
});
