import { describe, expect, it } from 'vitest';
import { CIRCUIT_HISTORY_SHOWN, circuitEntry } from '../../../lib/console/circuitsPanel.js';
import type { CircuitView } from '../../../lib/transports/health.js';

const NOW = Date.parse('2026-12-02T12:00:00Z');

describe('a circuit as the console panel and `sendproof stats` show it', () => {
  it('counts only the current window: an older window of failures is 0 now', () => {
    // Prepare
    const base: CircuitView = { provider: 'ses', state: 'closed', failures: 2, version: 0, history: [] };
    // Act
    const fresh = circuitEntry({ ...base, windowStart: NOW - 30_000 }, 1, 60, NOW);
    const stale = circuitEntry({ ...base, windowStart: NOW - 61_000 }, 1, 60, NOW);
    // Assess
    expect(fresh).toMatchObject({ state: 'closed', failures: 2, windowSeconds: 60, probeDue: false });
    expect(stale.failures).toBe(0);
    expect(fresh.reason).toBeUndefined();
    expect(fresh.changedAt).toBeUndefined();
  });

  it('an open circuit says until when, why in words, since when, and the newest changes first', () => {
    // Prepare
    const history = Array.from({ length: 7 }, (_, i) => ({
      s: i % 2 ? 'circuit_closed' : 'circuit_open',
      at: NOW - (7 - i) * 60_000,
      by: `dispatch:w${i}`,
      why: i % 2 ? 'probe_answered:accepted' : 'failures:5/60s',
    }));
    const view: CircuitView = {
      provider: 'sendgrid',
      state: 'open',
      failures: 5,
      openUntil: NOW + 45_000,
      reason: 'failures:5/60s',
      version: 7,
      history,
    };
    // Act
    const entry = circuitEntry(view, 2, 60, NOW);
    // Assess
    expect(entry).toMatchObject({
      provider: 'sendgrid',
      position: 2,
      state: 'open',
      failures: 0,
      openUntil: '2026-12-02T12:00:45.000Z',
      probeDue: false,
      reason: { raw: 'failures:5/60s', known: true },
      changedAt: '2026-12-02T11:59:00.000Z',
      changedAgeSeconds: 60,
    });
    expect(entry.history).toHaveLength(CIRCUIT_HISTORY_SHOWN);
    expect(entry.history[0]).toEqual({
      state: 'open',
      at: '2026-12-02T11:59:00.000Z',
      by: 'dispatch:w6',
      why: {
        raw: 'failures:5/60s',
        text: '5 provider failures in 60 s (5xx answers or requests that never left)',
        known: true,
      },
    });
  });

  it('a probe is due once the open time or the probe lease has passed', () => {
    const open: CircuitView = {
      provider: 'ses',
      state: 'open',
      failures: 0,
      openUntil: NOW - 1,
      reason: 'failures:5/60s',
      version: 1,
      history: [],
    };
    const probing: CircuitView = { ...open, state: 'half_open', probeUntil: NOW + 10_000 };
    delete probing.openUntil;
    expect(circuitEntry(open, 1, 60, NOW).probeDue).toBe(true);
    expect(circuitEntry(probing, 1, 60, NOW)).toMatchObject({
      state: 'half_open',
      probeUntil: '2026-12-02T12:00:10.000Z',
      probeDue: false,
      reason: { raw: 'failures:5/60s' },
    });
    expect(circuitEntry({ ...probing, probeUntil: NOW }, 1, 60, NOW).probeDue).toBe(true);
  });
});
