import type { Clock } from '../domain/clock.js';
import { NUMBER_TENANT, numberRefOf, OPT_OUT_REASON, optOutDetails } from '../ledger/optOut.js';
import type { SuppressionDetails } from '../ledger/port.js';
import type { RunLogger } from '../observability.js';
import type { ProviderSignal } from './signals.js';

/** What an opt signal needs of the suppression list (DynamoSuppressionList). */
export interface OptOutList {
  suppress(
    tenant: string,
    recipientRef: string,
    channel: 'sms',
    reason: string,
    details: SuppressionDetails,
  ): Promise<void>;
  liftOptOut(
    tenant: string,
    recipientRef: string,
    channel: 'sms',
    details: SuppressionDetails & { reason: string },
  ): Promise<boolean>;
}

export interface OptSignalDeps {
  suppressions: OptOutList;
  /** The content-hash key (lib/contentHashKey.ts): the number's ref is its keyed hash, as the dispatcher computes it. */
  numberKey: () => Promise<string>;
  clock: Clock;
  logger?: RunLogger;
}

/** What an inbound opt signal did: it is acknowledged either way (a repeat changes nothing). */
export type OptSignalResult = 'opted_out' | 'opted_in' | 'opt_in_without_opt_out' | 'not_an_opt_signal';

/**
 * A recipient's STOP or START reply, as the provider reported it (SMS v2 two-way through SNS, Twilio's
 * `OptOutType`): STOP suppresses the sender's number on SMS with source `provider_opt_out`, for every
 * tenant (the provider's opt-out list is the account's); START lifts that suppression, and only that one
 * (an operator's or a bounce's stays). The number is turned into its keyed ref here and never stored or
 * logged. Idempotent: the same reply delivered twice suppresses once.
 */
export const applyOptSignal = async (
  signal: ProviderSignal,
  deps: OptSignalDeps,
): Promise<OptSignalResult> => {
  if (signal.kind !== 'opt_out' && signal.kind !== 'opt_in') return 'not_an_opt_signal';
  const ref = numberRefOf(signal.phone, await deps.numberKey());
  const details = optOutDetails(`provider:${signal.provider}:${signal.evidenceId}`, deps.clock.now());
  if (signal.kind === 'opt_out') {
    await deps.suppressions.suppress(NUMBER_TENANT, ref, 'sms', OPT_OUT_REASON, details);
    deps.logger?.info('recipient opted out at the provider', {
      provider: signal.provider,
      keyword: signal.keyword,
      evidenceId: signal.evidenceId,
    });
    return 'opted_out';
  }
  const lifted = await deps.suppressions.liftOptOut(NUMBER_TENANT, ref, 'sms', {
    ...details,
    reason: `opted_in:${signal.keyword}`,
  });
  deps.logger?.info('recipient opted in at the provider', {
    provider: signal.provider,
    keyword: signal.keyword,
    evidenceId: signal.evidenceId,
    lifted,
  });
  return lifted ? 'opted_in' : 'opt_in_without_opt_out';
};
