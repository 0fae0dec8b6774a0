import { NUMBER_TENANT, numberRefOf, OPT_OUT_REASON, optOutDetails } from '../ledger/optOut.js';
import type { DeliveryRecord } from '../ledger/port.js';
import { METRIC } from '../observability.js';
import type { SendResult } from '../transports/port.js';
import { type ChannelRun, done, move, type Step, ttlFor } from './run.js';

/**
 * A send the provider refused because the destination opted out (SMS v2 `ConflictException`
 * `DESTINATION_PHONE_NUMBER_OPTED_OUT`, Twilio 21610: `rejected` with cause `opted_out`). Nothing left, and
 * nothing will while the STOP stands: the recipient, and the number, are suppressed on the channel with
 * source `provider_opt_out` (so later intents stop at the gate, with no provider call), and the row ends
 * `suppressed` (`opted_out`). `suppressed` is a definitive failure: a fallback purpose may still use its
 * other channel. The suppression is written first: it is the provider's word and idempotent, and a row
 * that then loses its write still leaves the STOP honoured.
 */
export const recordOptOut = async (
  run: ChannelRun,
  row: DeliveryRecord,
  result: Extract<SendResult, { kind: 'rejected' }>,
): Promise<Step> => {
  const { ctx } = run;
  const now = ctx.clock.now();
  const details = optOutDetails(`provider:${run.transport.name}:${result.code ?? result.reason}`, now);
  await ctx.suppressions.suppress(row.tenant, row.recipientRef, run.channel, OPT_OUT_REASON, details);
  const phone = run.channel === 'sms' ? run.job.valid.intent.recipient.phone : undefined;
  if (phone) {
    const number = numberRefOf(phone, ctx.contentHashKey);
    await ctx.suppressions.suppress(NUMBER_TENANT, number, run.channel, OPT_OUT_REASON, details);
    // The number's opt-in (a START reply names only the number) then lifts the recipient's entry too.
    await ctx.suppressions.linkOptOut?.(number, row.tenant, row.recipientRef);
  }
  const suppressed = await move(ctx, row, 'suppressed', OPT_OUT_REASON, {
    attempts: row.attempts,
    ttl: ttlFor(run, now),
  });
  ctx.metrics?.count(METRIC.suppressed);
  return done(suppressed, 'suppressed');
};
