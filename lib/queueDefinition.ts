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
  retentionDays: 14,
  batchSize: 10,
} as const;

/** Local mode shortens time so that a demo shows redelivery and lease expiry within seconds. */
export const LOCAL_TIMING = {
  visibilityTimeoutSeconds: 8,
  /** Must stay below the visibility timeout, so a redelivery finds an expired lease. */
  leaseSeconds: 5,
  reconcileEveryMs: 3_000,
} as const;
