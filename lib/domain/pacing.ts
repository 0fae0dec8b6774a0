/**
 * Pure rules of the send-rate pacer (lib/rate/Pacer.ts does the I/O). Time is cut into slots of
 * `slotMs`; slot `s` admits `slotCredit(s, rate, slotMs)` sends, shared by every dispatcher through one
 * DynamoDB counter per slot.
 *
 * A slot's credit is the whole sends that fall due in its span, so a rate that is not a whole number
 * per slot is carried over as a fraction: 0.5/s with 500 ms slots admits in every fourth slot, 3/s
 * alternates 1 and 2. The credits of consecutive slots telescope, so over any run of slots at one rate
 * the sum is within one send of rate × time, whatever the slot length (issue 26 item 5: the old
 * `max(1, floor(rate × slotMs / 1000))` admitted 2/s for 1/s and for 3/s, and AIMD could not go below
 * one send per slot). Every environment computes the same credit from the absolute slot number.
 *
 * AIMD: a provider throttle halves this environment's rate (at most once per `decreaseEveryMs`, so one
 * burst of 429s from a single slot counts once), never below `floor`; each accepted send adds
 * `ceiling / 100` back, never above the configured ceiling.
 */
export interface AimdState {
  rate: number;
  lastDecreaseAt: number;
}

export interface AimdLimits {
  ceiling: number;
  floor: number;
  decreaseEveryMs: number;
}

export const slotOf = (now: number, slotMs: number): number => Math.floor(now / slotMs);
export const slotStart = (slot: number, slotMs: number): number => slot * slotMs;

/**
 * Sends slot `slot` admits at `rate` per second: floor((s + 1) × c) − floor(s × c) with c the credit
 * per slot. The whole part of c is added exactly and only its fraction multiplies the slot number, so a
 * whole-number credit (a tenant's `perMinute` over 60 s slots) is exact and the product stays far from
 * floating-point trouble (slot numbers are ~4 × 10⁹).
 */
export const slotCredit = (slot: number, rate: number, slotMs: number): number => {
  const perSlot = (rate * slotMs) / 1000;
  const whole = Math.floor(perSlot + 1e-9);
  const fraction = perSlot - whole;
  if (fraction < 1e-9) return whole;
  return whole + Math.floor((slot + 1) * fraction) - Math.floor(slot * fraction);
};

/** The first slot at or after `slot` with any credit (at most a bounded look-ahead; a rate is > 0). */
export const nextSlotWithCredit = (slot: number, rate: number, slotMs: number): number => {
  const limit = slot + Math.ceil(1000 / (rate * slotMs)) + 2;
  for (let s = slot; s < limit; s += 1) if (slotCredit(s, rate, slotMs) > 0) return s;
  return limit;
};

export const onThrottle = (state: AimdState, limits: AimdLimits, now: number): AimdState => {
  if (now - state.lastDecreaseAt < limits.decreaseEveryMs) return state;
  return { rate: Math.max(limits.floor, state.rate / 2), lastDecreaseAt: now };
};

export const onSuccess = (state: AimdState, limits: AimdLimits): AimdState => ({
  ...state,
  rate: Math.min(limits.ceiling, state.rate + limits.ceiling / 100),
});

/**
 * A provider throttle, from the retryable reasons the adapters give: HTTP 429 (`http_429`, the REST
 * convention's `rate_limited`, Resend's `rate_limit_exceeded`, Twilio's `twilio_20429`), SES's
 * TooManyRequestsException, End User Messaging's ThrottlingException.
 */
export const isThrottle = (result: { kind: string; reason?: string }): boolean =>
  result.kind === 'retryable' && /throttl|too.?many.?requests|rate.?limit|429/i.test(result.reason ?? '');
