import * as z from 'zod/mini';
import '../domain/zodLocale.js';

/** Fault kinds the simulator can inject. Part of the public admin API (`POST /_sim/faults`). */
export const FAULT_KINDS = [
  'accept_then_drop',
  'drop_before_accept',
  'status_429',
  'status_500',
  'reject',
  'delay',
  // Post-acceptance evidence (the send is accepted; the events feed tells the rest):
  'bounce',
  'soft_bounce',
  'complaint',
  'sms_ttl_expired',
  'carrier_failure',
  'sms_unknown',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const FaultSpecSchema = z
  .strictObject({
    match: z._default(
      z.strictObject({
        channel: z.optional(z.enum(['email', 'sms'])),
        to: z.optional(z.string().check(z.minLength(1))),
        idempotencyKey: z.optional(z.string().check(z.minLength(1))),
      }),
      {},
    ),
    fault: z.enum(FAULT_KINDS),
    /** How many matching requests the fault applies to (the first ones). */
    times: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(100_000)), 1),
    /** `status_429` only: the Retry-After header, in seconds (default 1). */
    retryAfterSeconds: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(86_400))),
    /** `delay` only: how long to hold the answer, in ms. */
    delayMs: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(600_000))),
    /**
     * Any accepted send: hold the answer until a reader of the pull feed asks for events past the
     * message's last one (`GET /v1/events?after=`: a reader moves its cursor only once it has recorded
     * the page), then `afterMs` more, at most `maxMs` in all: the provider's event is recorded before the
     * sender hears the answer (an early bounce beats the `accepted` write).
     */
    answerAfterEventsRead: z.optional(
      z.strictObject({
        afterMs: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(60_000)), 500),
        maxMs: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(600_000)), 4_000),
      }),
    ),
    /** Any accepted send: how long after acceptance the delivery (or bounce) event appears. */
    deliverAfterMs: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(86_400_000))),
    /** Every event of the message appears twice (same event id), as at-least-once feeds do. */
    duplicate: z.optional(z.boolean()),
    /** The message's events appear newest first (their timestamps still say the truth). */
    outOfOrder: z.optional(z.boolean()),
  })
  .check(
    z.refine((f) => f.fault !== 'delay' || f.delayMs !== undefined, {
      message: 'a delay fault needs delayMs',
      path: ['delayMs'],
    }),
  );
export type FaultSpec = z.output<typeof FaultSpecSchema>;
export type FaultSpecInput = z.input<typeof FaultSpecSchema>;

/** A registered fault and how many more requests it will hit. */
export interface ActiveFault {
  id: string;
  spec: FaultSpec;
  remaining: number;
  /** `answerAfterEventsRead`: the answer went out after a reader was past its events (not at `maxMs`). */
  answeredAfterEventsRead?: boolean;
}

export interface RequestFacts {
  channel: 'email' | 'sms';
  to: string | undefined;
  idempotencyKey: string | undefined;
}

export const faultMatches = (fault: ActiveFault, facts: RequestFacts): boolean => {
  const { channel, to, idempotencyKey } = fault.spec.match;
  return (
    fault.remaining > 0 &&
    (channel === undefined || channel === facts.channel) &&
    (to === undefined || to === facts.to) &&
    (idempotencyKey === undefined || idempotencyKey === facts.idempotencyKey)
  );
};
