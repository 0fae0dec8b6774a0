import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { lazySchema } from '../domain/lazySchema.js';

/**
 * Deployment-wide send-rate settings (`SENDPROOF_RATE_LIMITS`, JSON): a pace per transport and a quota
 * per tenant, shared by every concurrent dispatcher through DynamoDB (lib/rate/Pacer.ts).
 */
const transportRateSchema = () =>
  z.strictObject({
    /** The provider's send quota: the AIMD ceiling. */
    perSecond: z.number().check(z.positive(), z.lte(10_000)),
    /** The lowest pace a run of throttles may bring it to. Default: a tenth of the ceiling. */
    floorPerSecond: z.optional(z.number().check(z.positive(), z.lte(10_000))),
    /** Slot length: one shared counter per slot; a longer slot is fewer writes and a burstier start. */
    slotMs: z._default(z.number().check(z.int(), z.gte(50), z.lte(1000)), 500),
  });

/** Built on first use: only a deployment that sets SENDPROOF_RATE_LIMITS parses it (lib/domain/lazySchema.ts). */
export const rateSettingsSchema = lazySchema('rateSettings', () =>
  z.strictObject({
    transports: z._default(z.record(z.string().check(z.minLength(1)), transportRateSchema()), {}),
    /** Sends per minute per tenant (all channels). */
    tenants: z._default(
      z.record(
        z.string().check(z.minLength(1)),
        z.strictObject({ perMinute: z.number().check(z.int(), z.gte(1)) }),
      ),
      {},
    ),
    /**
     * The longest a dispatcher waits in memory for a token. Beyond it the row is written `retry_wait`
     * (`paced`, no attempt spent) and the message comes back when the token is due.
     */
    maxWaitMs: z._default(z.number().check(z.int(), z.gte(0), z.lte(10_000)), 2_000),
  }),
);
export type RateSettings = z.output<ReturnType<typeof rateSettingsSchema>>;
export type RateSettingsInput = z.input<ReturnType<typeof rateSettingsSchema>>;

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
