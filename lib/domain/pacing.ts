/**
 * Pure rules of the send-rate pacer (lib/rate/Pacer.ts does the I/O). Time is cut into slots of
 * `slotMs`; each slot admits `perSlot(rate)` sends, shared by every dispatcher through one DynamoDB
 * counter per slot.
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

/** Sends one slot admits at `rate` per second: at least one, so a slow rate still moves. */
export const perSlot = (rate: number, slotMs: number): number =>
  Math.max(1, Math.floor((rate * slotMs) / 1000));

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
