/** Time source. Everything that compares against "now" (expiry, leases, deadlines) takes a Clock. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
