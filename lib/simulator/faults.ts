import * as z from 'zod';

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
    match: z
      .strictObject({
        channel: z.enum(['email', 'sms']).optional(),
        to: z.string().min(1).optional(),
        idempotencyKey: z.string().min(1).optional(),
      })
      .default({}),
    fault: z.enum(FAULT_KINDS),
    /** How many matching requests the fault applies to (the first ones). */
    times: z.number().int().min(1).max(100_000).default(1),
    /** `status_429` only: the Retry-After header, in seconds (default 1). */
    retryAfterSeconds: z.number().int().min(0).max(86_400).optional(),
    /** `delay` only: how long to hold the answer, in ms. */
    delayMs: z.number().int().min(0).max(600_000).optional(),
    /**
     * Any accepted send: hold the answer until a reader of the pull feed asks for events past the
     * message's last one (`GET /v1/events?after=`: a reader moves its cursor only once it has recorded
     * the page), then `afterMs` more, at most `maxMs` in all: the provider's event is recorded before the
     * sender hears the answer (an early bounce beats the `accepted` write).
     */
    answerAfterEventsRead: z
      .strictObject({
        afterMs: z.number().int().min(0).max(60_000).default(500),
        maxMs: z.number().int().min(1).max(600_000).default(4_000),
      })
      .optional(),
    /** Any accepted send: how long after acceptance the delivery (or bounce) event appears. */
    deliverAfterMs: z.number().int().min(0).max(86_400_000).optional(),
    /** Every event of the message appears twice (same event id), as at-least-once feeds do. */
    duplicate: z.boolean().optional(),
    /** The message's events appear newest first (their timestamps still say the truth). */
    outOfOrder: z.boolean().optional(),
  })
  .refine((f) => f.fault !== 'delay' || f.delayMs !== undefined, {
    message: 'a delay fault needs delayMs',
    path: ['delayMs'],
  });
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
