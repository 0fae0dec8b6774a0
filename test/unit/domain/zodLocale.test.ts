import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import '../../../lib/domain/zodLocale.js';

describe('zod/mini messages', () => {
  it('are English sentences, not "Invalid input"', () => {
    const parsed = z.object({ to: z.string().check(z.minLength(3)) }).safeParse({ to: 'x' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toBe('Too small: expected string to have >=3 characters');
  });
});
