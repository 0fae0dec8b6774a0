import type { SlotStore } from '../../lib/rate/Pacer.js';

/**
 * The pacer's shared slot counters in memory (a test double for lib/rate/Pacer.ts's TokenSlots, which
 * holds them in DynamoDB): the same rule as TokenSlots' conditional UpdateItem, `used + n ≤ limit`, with
 * a partly used slot granted what is left. Every take is recorded so a test can count writes.
 */
export class MemorySlots implements SlotStore {
  readonly used = new Map<string, number>();
  writes = 0;

  async take(key: string, start: number, limit: number, want: number): Promise<number> {
    this.writes += 1;
    const id = `${key}#${start}`;
    const used = this.used.get(id) ?? 0;
    const n = Math.max(0, Math.min(want, limit - used));
    if (n > 0) this.used.set(id, used + n);
    return n;
  }
}
