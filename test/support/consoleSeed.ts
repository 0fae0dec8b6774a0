import { buildClaimRecord } from '../../lib/dispatch/claimRecord.js';
import type { Clock } from '../../lib/domain/clock.js';
import { parseIntent } from '../../lib/domain/intent.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import type { DeliveryRecord, Ledger } from '../../lib/ledger/port.js';
import { resetIntent } from './fixtures.js';

export type SeedState = 'claimed' | 'retry_wait' | 'stalled' | 'unknown' | 'quarantined' | 'accepted';

/**
 * Puts one row in a given state through the real Ledger port (claim, then the transitions a dispatcher
 * and a reconciler would write), so the console reads exactly what production rows look like.
 * `eventIdOverride` writes a raw event id the intent schema would refuse (a hostile row for the XSS probe).
 */
export const seedRow = async (
  ledger: Ledger,
  clock: Clock,
  options: {
    eventId: string;
    state: SeedState;
    transport?: string;
    eventIdOverride?: string;
    /** Another tenant than the fixture's (`acme-games`). */
    tenant?: string;
    recipientRef?: string;
  },
): Promise<DeliveryRecord> => {
  const overrides = {
    eventId: options.eventId,
    ...(options.tenant ? { tenant: options.tenant } : {}),
    ...(options.recipientRef ? { recipient: { ref: options.recipientRef, email: 'seed@example.com' } } : {}),
  };
  const parsed = parseIntent(resetIntent(overrides, clock.now()), {
    purposes: new PurposeRegistry(),
    clock,
  });
  if (!parsed.ok) throw parsed.error;
  const now = clock.now();
  const record = buildClaimRecord({
    valid: parsed.value,
    channel: 'email',
    contentHash: `h1:${options.eventId}`,
    templateOwner: 'application',
    workerId: 'dispatch:seed',
    now,
    leaseMs: 60_000,
  });
  if (options.eventIdOverride) record.eventId = options.eventIdOverride;
  const claimed = await ledger.claim(record);
  if (claimed.kind !== 'claimed') throw new Error(`seed conflict on ${record.pk}`);
  let row = claimed.record;
  const step = async (to: DeliveryRecord['state'], why: string, set: Record<string, unknown> = {}) => {
    const result = await ledger.transition({
      pk: row.pk,
      from: row.state,
      expectedVersion: row.version,
      to,
      by: to === 'quarantined' ? 'reconciler:seed' : to === 'stalled' ? 'sweep:seed' : 'dispatch:seed',
      why,
      set,
      now: clock.now(),
    });
    if (result.kind !== 'ok') throw new Error(`seed transition to ${to} failed`);
    row = result.record;
  };
  if (options.state === 'claimed') return row;
  await step('dispatching', 'lease_acquired', { transport: options.transport ?? 'rest', attempts: 1 });
  if (options.state === 'accepted') {
    await step('accepted', 'provider_accepted', { providerMessageId: `sim-${options.eventId}` });
    return row;
  }
  if (options.state === 'retry_wait' || options.state === 'stalled') {
    await step('retry_wait', 'provider_throttled', { nextAttemptAt: clock.now() + 30_000 });
    // As the sweep writes it (lib/reconcile/Sweeper.ts): a retry_wait row long past due with nothing sealed.
    if (options.state === 'stalled') await step('stalled', 'nothing_sealed');
    return row;
  }
  await step('unknown', 'provider_timeout_after_send');
  if (options.state === 'quarantined') await step('quarantined', 'no_lookup_no_replay');
  return row;
};
