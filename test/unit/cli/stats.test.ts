import { describe, expect, it } from 'vitest';
import { ledgerStats } from '../../../cli/commands/stats.js';
import type { ItemSummary } from '../../../lib/ledger/operatorQueries.js';

describe('sendproof stats', () => {
  it('shows each provider circuit (failover) and does not count health or breaker items as rows', async () => {
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
    expect(stats.circuits).toEqual([
      { provider: 'ses', state: 'open', failures: 5, openUntil: 70_000, reason: 'failures:5/60s' },
      { provider: 'sendgrid', state: 'closed', failures: 1 },
    ]);
  });
});
