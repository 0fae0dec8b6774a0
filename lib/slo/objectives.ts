import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { lazySchema } from '../domain/lazySchema.js';

/**
 * A purpose's service level objectives, in user terms (seed 004: "a settled order should produce one
 * receipt within a bounded time, while duplicate receipts stay below an explicitly reviewed error
 * budget"). The unit is one message on one channel: one ledger row, from the time the caller asked for it
 * (the publish time, or `sendAt` when later) to the fact that settles it.
 *
 * - `accepted`: at least `target` of the messages reach the provider (accepted, or held by it for a
 *   scheduled send) within `withinSeconds`. A message that expired while it waited, went `unknown` and
 *   then quarantined, or stalled counts against it; one withheld on purpose (suppressed, blocked,
 *   cancelled, invalid) or refused by the provider does not count at all.
 * - `delivered` (optional): where the channel reports delivery, at least `target` of the reported
 *   messages are delivered within `withinSeconds`; a reported bounce or carrier failure counts against it.
 * - `duplicates`: at most one message in `atMostOneIn` is accepted twice (the `multiple-acceptances`
 *   rule).
 * - `windowDays`: the rolling window attainment and budgets are computed over.
 */
const latencyObjectiveSchema = () =>
  z.strictObject({
    withinSeconds: z.number().check(z.int(), z.gte(1), z.lte(7 * 86_400)),
    /** Fraction of messages, e.g. 0.99. */
    target: z.number().check(z.gt(0.5), z.lt(1)),
  });

/**
 * Built on first use (lib/domain/lazySchema.ts): only a purpose policy from the deployment's configuration
 * is parsed; the built-in purposes carry BUILT_IN_SLOS, checked against this schema by the unit tests.
 */
export const sloSchema = lazySchema('slo', () =>
  z.strictObject({
    accepted: latencyObjectiveSchema(),
    delivered: z.optional(latencyObjectiveSchema()),
    duplicates: z.strictObject({ atMostOneIn: z.number().check(z.int(), z.gte(10), z.lte(1_000_000_000)) }),
    windowDays: z._default(z.number().check(z.int(), z.gte(1), z.lte(90)), 28),
  }),
);
export type Slo = z.output<ReturnType<typeof sloSchema>>;
export type SloInput = z.input<ReturnType<typeof sloSchema>>;
export type LatencyObjective = Slo['accepted'];

/** What a purpose without its own `slo` gets (issue 28's example figures). */
export const DEFAULT_SLO: Slo = {
  accepted: { withinSeconds: 120, target: 0.99 },
  delivered: { withinSeconds: 600, target: 0.99 },
  duplicates: { atMostOneIn: 100_000 },
  windowDays: 28,
};

/** The built-in purposes' objectives (lib/domain/purposes.ts). */
export const BUILT_IN_SLOS = {
  // A reset is wanted within seconds and expires in minutes.
  'password-reset': {
    accepted: { withinSeconds: 60, target: 0.99 },
    delivered: { withinSeconds: 300, target: 0.99 },
    duplicates: { atMostOneIn: 100_000 },
    windowDays: 28,
  },
  receipt: DEFAULT_SLO,
  // A report may carry a PDF and may fall back to SMS: slower, same duplicate budget.
  'health-report': {
    accepted: { withinSeconds: 600, target: 0.99 },
    delivered: { withinSeconds: 3_600, target: 0.99 },
    duplicates: { atMostOneIn: 100_000 },
    windowDays: 28,
  },
} as const satisfies Record<string, Slo>;

/**
 * States whose first arrival decides a message's acceptance objective: reaching the provider (good when
 * in time), or ending up where it was not sent in time (bad). Everything else does not decide: a
 * provider refusal and a refusal on purpose (suppressed, blocked, cancelled, invalid) are outcomes, not
 * latency. The stream metrics and the archive query use this one list.
 */
export const ACCEPTANCE_DECIDING = [
  'accepted',
  'provider_scheduled',
  'expired',
  'quarantined',
  'stalled',
  'resolved_accepted',
  'resolved_rejected',
  'superseded',
] as const;
/** Of those, the ones that mean the provider took the message. */
export const ACCEPTANCE_GOOD = ['accepted', 'provider_scheduled'] as const;

/** Delivery facts that settle the delivery objective: the first one recorded decides. */
export const DELIVERY_DECIDING = [
  'delivered',
  'complained',
  'engaged',
  'bounced_permanent',
  'carrier_failed',
  'ttl_expired',
  'rejected',
  'provider_suppressed',
] as const;
/** Of those, the ones that mean the recipient got it. */
export const DELIVERY_GOOD = ['delivered', 'complained', 'engaged'] as const;

/** The error budget of a latency objective in messages: how many may miss it among `eligible`. */
export const latencyBudget = (objective: LatencyObjective, eligible: number): number =>
  eligible * (1 - objective.target);

/**
 * Burn-rate thresholds of the SRE workbook's multi-window alerts, scaled to the SLO window: page when 2 %
 * of the window's budget burns in 1 h, open a ticket when 5 % burns in 6 h (14.4 and 6 for 30 days).
 */
export const burnRateThresholds = (windowDays: number): { fast: number; slow: number } => {
  const hours = windowDays * 24;
  return { fast: round2((0.02 * hours) / 1), slow: round2((0.05 * hours) / 6) };
};

const round2 = (value: number): number => Math.round(value * 100) / 100;
