import { describe, expect, it } from 'vitest';
import { cancelCovers } from '../../../lib/domain/cancel.js';
import { decideExisting } from '../../../lib/domain/resume.js';
import { sweepRow } from '../../../lib/domain/sweep.js';

const now = Date.parse('2026-12-01T10:00:00Z');
const facts = {
  now,
  graceMs: 10_000,
  recheckMs: 60_000,
  sealEndsAt: now + 86_400_000,
  hasNextChannel: false,
  fallbackHoldMs: 0,
  replayWindowOpen: false,
};

describe('scheduled rows: the existing-row decision and the sweep', () => {
  it('a scheduled row waits for its sendAt, then resumes like a first claim (no replay)', () => {
    // Prepare
    const row = {
      state: 'scheduled' as const,
      nextAttemptAt: now + 1,
      history: [{ s: 'scheduled' as const }],
    };
    // Act & Assess
    expect(decideExisting(row, { sameContent: true, now, replayWindowOpen: false })).toEqual({
      kind: 'scheduled',
      until: now + 1,
    });
    expect(decideExisting(row, { sameContent: true, now: now + 1, replayWindowOpen: false })).toEqual({
      kind: 'resume',
      replay: false,
    });
    // Same identity, other content: blocked even while scheduled.
    expect(decideExisting(row, { sameContent: false, now, replayWindowOpen: false }).kind).toBe(
      'content_mismatch',
    );
  });

  it('the sweep resumes a scheduled row exactly when due (no grace: it is the owner), and settles a provider-held one after sendAt plus grace', () => {
    expect(sweepRow({ state: 'scheduled', nextAttemptAt: now + 5, updatedAt: now }, facts)).toEqual({
      kind: 'later',
      at: now + 5,
    });
    expect(sweepRow({ state: 'scheduled', nextAttemptAt: now, updatedAt: now }, facts)).toEqual({
      kind: 'resume',
    });
    expect(
      sweepRow({ state: 'provider_scheduled', nextAttemptAt: now - 5_000, updatedAt: now }, facts),
    ).toEqual({
      kind: 'later',
      at: now + 5_000,
    });
    expect(
      sweepRow({ state: 'provider_scheduled', nextAttemptAt: now - 10_001, updatedAt: now }, facts),
    ).toEqual({
      kind: 'settle_handoff',
    });
    expect(sweepRow({ state: 'cancelled', updatedAt: now }, facts)).toEqual({ kind: 'done' });
  });

  it('a cancel order covers its purpose and channel; an absent field covers all', () => {
    expect(cancelCovers({}, 'receipt', 'sms')).toBe(true);
    expect(cancelCovers({ channel: 'sms' }, 'receipt', 'email')).toBe(false);
    expect(cancelCovers({ purpose: 'receipt', channel: 'email' }, 'receipt', 'email')).toBe(true);
    expect(cancelCovers({ purpose: 'health-report' }, 'receipt', 'email')).toBe(false);
  });
});
