import * as z from 'zod';

/**
 * Deployment-wide send-rate settings (`SENDPROOF_RATE_LIMITS`, JSON): a pace per transport and a quota
 * per tenant, shared by every concurrent dispatcher through DynamoDB (lib/rate/Pacer.ts).
 */
export const TransportRateSchema = z.strictObject({
  /** The provider's send quota: the AIMD ceiling. */
  perSecond: z.number().positive().max(10_000),
  /** The lowest pace a run of throttles may bring it to. Default: a tenth of the ceiling. */
  floorPerSecond: z.number().positive().max(10_000).optional(),
  /** Slot length: one shared counter per slot; a longer slot is fewer writes and a burstier start. */
  slotMs: z.number().int().min(50).max(1000).default(500),
});

export const RateSettingsSchema = z.strictObject({
  transports: z.record(z.string().min(1), TransportRateSchema).default({}),
  /** Sends per minute per tenant (all channels). */
  tenants: z.record(z.string().min(1), z.strictObject({ perMinute: z.number().int().min(1) })).default({}),
  /**
   * The longest a dispatcher waits in memory for a token. Beyond it the row is written `retry_wait`
   * (`paced`, no attempt spent) and the message comes back when the token is due.
   */
  maxWaitMs: z.number().int().min(0).max(10_000).default(2_000),
});
export type RateSettings = z.output<typeof RateSettingsSchema>;
export type RateSettingsInput = z.input<typeof RateSettingsSchema>;

/**
 * The SQS event source's maximum concurrency for a configured pace: enough concurrent invocations to
 * keep the slowest paced transport busy (rate × latency sends in flight, `recordsAtOnce` per
 * invocation) plus one, never below 2 (the AWS minimum) and never above `cap`.
 */
export const maxConcurrencyFor = (
  settings: Pick<RateSettings, 'transports'>,
  options: { recordsAtOnce: number; sendLatencyMs: number; cap: number },
): number | undefined => {
  const rates = Object.values(settings.transports).map((t) => t.perSecond);
  if (rates.length === 0) return undefined;
  const slowest = Math.min(...rates);
  const inFlight = (slowest * options.sendLatencyMs) / 1000;
  return Math.min(options.cap, Math.max(2, Math.ceil(inFlight / options.recordsAtOnce) + 1));
};
