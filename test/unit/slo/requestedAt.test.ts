import { describe, expect, it } from 'vitest';
import { requestedAt } from '../../../lib/dispatch/claimRecord.js';
import type { ValidIntent } from '../../../lib/domain/intent.js';

const now = Date.parse('2026-11-30T12:00:00Z');
const valid = (extra: Partial<ValidIntent>) => extra as ValidIntent;

describe('the SLO clock of a claim (reqAt)', () => {
  it('starts at the intent’s publishedAt, else the queue’s SentTimestamp, else the claim', () => {
    expect(requestedAt(valid({ publishedAtMs: now - 5_000 }), now - 3_000, now)).toBe(now - 5_000);
    expect(requestedAt(valid({}), now - 3_000, now)).toBe(now - 3_000);
    expect(requestedAt(valid({}), undefined, now)).toBe(now);
  });

  it('never starts after the claim (a publisher clock ahead), and starts at sendAt for a send scheduled later', () => {
    expect(requestedAt(valid({ publishedAtMs: now + 60_000 }), undefined, now)).toBe(now);
    expect(requestedAt(valid({ publishedAtMs: now - 1_000, sendAtMs: now + 20_000 }), undefined, now)).toBe(
      now + 20_000,
    );
    expect(requestedAt(valid({ publishedAtMs: now - 1_000, sendAtMs: now - 30_000 }), undefined, now)).toBe(
      now - 1_000,
    );
  });
});
