import { describe, expect, it } from 'vitest';
import { isUnsentAndIdle } from '../../../lib/domain/resume.js';
import { NON_TERMINAL_STATES, STATES } from '../../../lib/domain/states.js';
import { ownerAtResumeLimit, STALL_AT_RESUME_LIMIT } from '../../../lib/domain/sweep.js';

const now = Date.parse('2026-12-01T10:00:00Z');

describe('the resume limit leaves no non-final row without an owner (invariant 8)', () => {
  it('gives every non-final state exactly one owner, and none to a final state', () => {
    // Act
    const owners = Object.fromEntries(STATES.map((s) => [s, ownerAtResumeLimit(s)]));
    // Assess
    for (const state of NON_TERMINAL_STATES) expect(owners[state]).toBeDefined();
    for (const state of STATES.filter((s) => !NON_TERMINAL_STATES.includes(s)))
      expect(owners[state]).toBeUndefined();
    expect(owners).toMatchObject({
      scheduled: 'stall',
      claimed: 'stall',
      retry_wait: 'stall',
      dispatching: 'sweep',
      provider_scheduled: 'sweep',
      unknown: 'attention',
      quarantined: 'attention',
      stalled: 'attention',
    });
  });

  it('stalls scheduled rows too (they have no index entry of their own), not only claimed and retry_wait', () => {
    expect([...STALL_AT_RESUME_LIMIT].sort()).toEqual(['claimed', 'retry_wait', 'scheduled']);
  });
});

describe('an unsent, idle row (the one a resume may close as blocked when its intent can no longer be sent)', () => {
  it('is a scheduled row, a retry_wait that was never unknown, or a claimed row past its lease', () => {
    const row = (state: 'scheduled' | 'retry_wait' | 'claimed' | 'unknown' | 'dispatching', extra = {}) => ({
      state,
      history: [{ s: state }],
      ...extra,
    });
    expect(isUnsentAndIdle(row('scheduled'), now)).toBe(true);
    expect(isUnsentAndIdle(row('retry_wait'), now)).toBe(true);
    expect(isUnsentAndIdle(row('claimed', { leaseUntil: now - 1 }), now)).toBe(true);
    expect(isUnsentAndIdle(row('claimed', { leaseUntil: now + 1 }), now)).toBe(false);
    expect(isUnsentAndIdle(row('dispatching', { leaseUntil: now - 1 }), now)).toBe(false);
    expect(isUnsentAndIdle(row('unknown'), now)).toBe(false);
    // Unknown once: a request may have left; only evidence settles it.
    expect(
      isUnsentAndIdle(
        { state: 'retry_wait', history: [{ s: 'dispatching' }, { s: 'unknown' }, { s: 'retry_wait' }] },
        now,
      ),
    ).toBe(false);
  });
});
