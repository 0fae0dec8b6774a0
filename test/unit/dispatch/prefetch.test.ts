import { describe, expect, it } from 'vitest';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import type { GateFactsReader } from '../../../lib/ledger/port.js';
import { resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { createMemoryHarness } from '../../support/memoryHarness.js';

/** Counts intent validations: each one looks its purpose up exactly once (lib/domain/intent.ts). */
class CountingPurposes extends PurposeRegistry {
  lookups = 0;
  override find(name: string) {
    this.lookups += 1;
    return super.find(name);
  }
}

// Facts that know nothing: every gate reads for itself, as when a batch read misses.
const noFacts: GateFactsReader = {
  read: async () => ({ suppression: () => undefined, flowExists: () => undefined }),
};

describe('a queue batch (issue 27: no repeated parsing of the same intent)', () => {
  it('validates each intent once: handle takes the parse prefetch made for the batch', async () => {
    const clock = new ManualClock(Date.now());
    const bodies = (tag: string) =>
      [1, 2, 3].map((i) => JSON.stringify(resetIntent({ eventId: `${tag}-${i}` }, clock.now())));
    const run = async (tag: string, withPrefetch: boolean) => {
      const h = createMemoryHarness(clock);
      const purposes = new CountingPurposes();
      const dispatcher = h.dispatcher({ purposes, gateFacts: noFacts });
      const batch = bodies(tag);
      const facts = withPrefetch ? await dispatcher.prefetch(batch) : undefined;
      const outcomes = await Promise.all(
        batch.map((body, i) => dispatcher.handle(body, { messageId: `${tag}-${i}` }, facts)),
      );
      expect(outcomes.map((o) => o.channels[0]?.state)).toEqual(['accepted', 'accepted', 'accepted']);
      return purposes.lookups;
    };
    // Without a prefetch each handle validates its body; a prefetch must add nothing to that.
    expect(await run('with-prefetch', true)).toBe(await run('handle-only', false));
  });

  it('a body that appears twice in a batch is parsed again for its second record', async () => {
    const clock = new ManualClock(Date.now());
    const h = createMemoryHarness(clock);
    const dispatcher = h.dispatcher({ gateFacts: noFacts });
    const body = JSON.stringify(resetIntent({ eventId: 'twice' }, clock.now()));
    const facts = await dispatcher.prefetch([body, body]);
    const first = await dispatcher.handle(body, { messageId: 'a' }, facts);
    const second = await dispatcher.handle(body, { messageId: 'b' }, facts);
    expect(first.channels[0]?.state).toBe('accepted');
    // One row per logical message: the duplicate delivery does not send again.
    expect(second.channels[0]?.state).toBe('accepted');
    expect(h.sends()).toHaveLength(1);
  });
});
