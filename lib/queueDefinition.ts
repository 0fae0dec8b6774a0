/**
 * Intake queue settings shared by the CDK construct and the local stack, so a redelivery behaves the same
 * on a laptop as in AWS: a message that keeps failing moves to the DLQ after MAX_RECEIVE_COUNT receives.
 */
export const INTAKE_QUEUE = {
  maxReceiveCount: 5,
  /** AWS guidance for Lambda event sources: visibility timeout at least 6 × the function timeout. */
  visibilityTimeoutMultiplier: 6,
  dispatcherTimeoutSeconds: 60,
  /** The longest a provider call may take (HttpExchange's send-stage bound): a lease must outlast both. */
  sendTimeoutSeconds: 10,
  /** The DLQ's message retention. A dead-lettered message keeps its original enqueue time (standard queue). */
  retentionDays: 14,
  /**
   * The intake queue's own retention, which is also the redrive window: a message redriven from the DLQ is
   * a new message on the intake queue and can be received (and claim) for at most this long.
   */
  intakeRetentionDays: 4,
  batchSize: 10,
} as const;

/**
 * The shortest retention a final ledger row may have: a copy of its intent can sit on the DLQ for
 * `retentionDays` and, redriven on its last day, on the intake queue for `intakeRetentionDays` more. A row
 * whose TTL ran out before then is gone when that copy arrives, so the copy would claim again and resend.
 */
export const FINAL_ROW_RETENTION_FLOOR_DAYS = INTAKE_QUEUE.retentionDays + INTAKE_QUEUE.intakeRetentionDays;

/** Local mode shortens time so that a demo shows redelivery and lease expiry within seconds. */
export const LOCAL_TIMING = {
  visibilityTimeoutSeconds: 8,
  /** Must stay below the visibility timeout, so a redelivery finds an expired lease. */
  leaseSeconds: 5,
  reconcileEveryMs: 3_000,
} as const;
