import { describe, expect, it } from 'vitest';
import {
  canTransition,
  INITIAL_STATES,
  isTerminal,
  OPERATOR_STATES,
  STATES,
  TERMINAL_STATES,
  TRANSITIONS,
} from '../../../lib/domain/states.js';

describe('state table', () => {
  it('makes every terminal state final', () => {
    for (const terminal of TERMINAL_STATES) {
      for (const next of STATES) expect(canTransition(terminal, next)).toBe(false);
    }
    expect(TERMINAL_STATES).toEqual(
      expect.arrayContaining([
        'accepted',
        'rejected',
        'expired',
        'suppressed',
        'blocked',
        'invalid',
        'cancelled',
        ...OPERATOR_STATES,
      ]),
    );
  });

  it('never lets unknown become claimable again', () => {
    expect(canTransition('unknown', 'claimed')).toBe(false);
    expect(canTransition('quarantined', 'claimed')).toBe(false);
    expect(canTransition('quarantined', 'dispatching')).toBe(false);
  });

  it('never lets a dispatching row be claimed or accepted without a provider answer path', () => {
    expect(canTransition('dispatching', 'claimed')).toBe(false);
    // `cancelled` and `blocked` only before the provider call (the cancel-marker read and the spend
    // breaker's count follow the dispatching write), and `provider_scheduled` only with the provider's
    // id, and `suppressed` only on the provider's opted-out refusal (issue 29): all are answers, not guesses.
    expect(TRANSITIONS.dispatching).toEqual([
      'accepted',
      'provider_scheduled',
      'rejected',
      'suppressed',
      'retry_wait',
      'unknown',
      'cancelled',
      'blocked',
    ]);
  });

  it('reaches operator outcomes only from unknown or quarantined, and a stalled row only ever as not sent', () => {
    for (const from of STATES) {
      for (const to of OPERATOR_STATES) {
        const allowed =
          from === 'unknown' || from === 'quarantined' || (from === 'stalled' && to !== 'resolved_accepted');
        expect(canTransition(from, to)).toBe(allowed);
      }
    }
  });

  it('lists only states that exist, and every non-initial state is reachable', () => {
    const targets = new Set(Object.values(TRANSITIONS).flat());
    for (const s of targets) expect(STATES).toContain(s);
    for (const s of STATES) expect(targets.has(s) || INITIAL_STATES.includes(s)).toBe(true);
    expect(isTerminal('claimed')).toBe(false);
  });

  it('a scheduled row reaches a provider only through dispatching, and unknown is never cancelled', () => {
    expect(TRANSITIONS.scheduled).not.toContain('accepted');
    expect(INITIAL_STATES).toContain('scheduled');
    expect(canTransition('unknown', 'cancelled')).toBe(false);
    expect(canTransition('quarantined', 'cancelled')).toBe(false);
    expect(isTerminal('cancelled')).toBe(true);
    expect(isTerminal('provider_scheduled')).toBe(false);
  });
});

describe('fallback authorization', () => {
  it('advances only on definitive non-delivery, never on unknown, in-flight or blocked', async () => {
    const { DEFINITIVE_FAILURES } = await import('../../../lib/domain/states.js');
    for (const s of [
      'unknown',
      'quarantined',
      'dispatching',
      'retry_wait',
      'claimed',
      'blocked',
      'accepted',
      'cancelled',
      'scheduled',
      'provider_scheduled',
    ] as const) {
      expect(DEFINITIVE_FAILURES).not.toContain(s);
    }
    expect(DEFINITIVE_FAILURES).toEqual(expect.arrayContaining(['rejected', 'expired', 'suppressed']));
  });
});
