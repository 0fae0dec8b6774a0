import type { Clock } from '../../lib/domain/clock.js';

/** A clock tests move by hand: a test double, so it lives with the tests, not in lib/domain. */
export class ManualClock implements Clock {
  constructor(private current: number = Date.parse('2026-11-30T12:00:00Z')) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
