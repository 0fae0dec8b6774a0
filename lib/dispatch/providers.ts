import type { Channel } from '../domain/purposes.js';
import { isReplay } from '../domain/resume.js';
import type { DeliveryRecord } from '../ledger/port.js';
import { CIRCUIT_METRIC } from '../transports/circuitMetric.js';
import { NEVER_LEFT_REASONS } from '../transports/classify.js';
import type { SendResult, Transport } from '../transports/port.js';
import type { ChannelRun, DispatchContext } from './run.js';

/**
 * Provider failover (issue 29). A channel has an ordered list of providers (`ctx.providers`, from
 * SENDPROOF_EMAIL_PROVIDERS / SENDPROOF_SMS_PROVIDERS); a row moves to the next one only when the ledger
 * can prove the one it used did not take the message, so a failover never becomes a duplicate:
 *
 *   - a `rejected` answer whose cause is the provider (credentials, an unverified sender, a request it
 *     cannot process). A refused recipient or content fails the same way everywhere, an account refusal
 *     is an operator's, and an opted-out recipient is never routed around: none of those moves;
 *   - a request proven never to have left (connect refused, DNS, TLS, not fully written: the stages
 *     lib/transports/classify.ts names `request_never_left` / `request_not_fully_sent`);
 *   - the provider's circuit is open (lib/transports/health.ts), checked before the `dispatching` write:
 *     the row skips it, and nothing was sent to it for this attempt.
 *
 * Never on `ambiguous`: the row becomes `unknown` on the provider that holds the attempt, and a row
 * whose history holds `unknown` (a replay) stays with that provider for good: evidence, a lookup, a replay
 * or an operator settles it there. Every provider gets the row's one idempotency key (its hash in their
 * tags / custom args / contexts), so evidence from either provider names, and settles, the same row.
 */
export const providersFor = (ctx: DispatchContext, channel: Channel): readonly Transport[] => {
  const chain = ctx.providers?.[channel];
  return chain && chain.length > 0 ? chain : [ctx.transports[channel]];
};

/**
 * The provider that holds a row's attempts: the one named on the row, else the channel's first. A row
 * naming a provider no longer configured gets the first (as before failover existed).
 */
export const holderOf = (ctx: DispatchContext, row: DeliveryRecord): Transport => {
  const chain = providersFor(ctx, row.channel);
  return chain.find((t) => t.name === row.transport) ?? chain[0]!;
};

/**
 * Picks the provider for the next attempt, before the `dispatching` write (prepare for a new claim, gates
 * for an existing row) and sets `run.transport` (and `run.probe` when this attempt is the circuit's
 * probe). A replay stays with its holder. Otherwise the row starts at the provider it names (a failover
 * already moved it) and skips any whose circuit is open, unless it is the last one left: then the start
 * is used anyway (a circuit reorders providers, it never stops a channel on its own).
 */
export const chooseProvider = async (run: ChannelRun, row?: DeliveryRecord): Promise<void> => {
  const { ctx } = run;
  const chain = providersFor(ctx, run.channel);
  run.probe = false;
  run.skipped = [];
  if (row && isReplay(row)) {
    run.transport = holderOf(ctx, row);
    return;
  }
  const named = row?.transport ? chain.findIndex((t) => t.name === row.transport) : -1;
  const start = Math.max(0, named);
  const circuits = ctx.circuits;
  if (!circuits || chain.length < 2) {
    run.transport = chain[start]!;
    return;
  }
  for (let i = start; i < chain.length; i += 1) {
    const candidate = chain[i]!;
    const circuit = await circuits.admit(candidate.name);
    if (circuit.kind === 'open') {
      run.skipped.push(candidate.name);
      continue;
    }
    run.transport = candidate;
    run.probe = circuit.kind === 'probe';
    if (run.skipped.length > 0) countSkips(run, candidate.name);
    return;
  }
  run.transport = chain[start]!;
  run.skipped = [];
};

const countSkips = (run: ChannelRun, to: string): void => {
  for (const from of run.skipped ?? []) {
    run.ctx.metrics?.count(CIRCUIT_METRIC.failovers, 1, { provider: from });
    run.ctx.logger.info('provider skipped: circuit open', { channel: run.channel, from, to });
  }
};

/** The `why` of a `dispatching` write that skipped providers with an open circuit (`circuit_open:ses`). */
export const skipWhy = (run: ChannelRun, why: string): string =>
  run.skipped && run.skipped.length > 0 ? `${why}:circuit_open:${run.skipped.join('+')}` : why;

/**
 * Whether an answer proves the provider did not take the message and another may: a provider-caused
 * refusal, or a request that never left. Never an ambiguous answer, a throttle (the same provider will
 * take it shortly), a transport-wide hold, nor a refusal of the recipient, the content or the account.
 */
export const provesNotTaken = (result: SendResult): boolean =>
  (result.kind === 'rejected' && result.cause === 'provider') ||
  (result.kind === 'retryable' &&
    !result.hold &&
    NEVER_LEFT_REASONS.some((r) => result.reason.startsWith(r)));

/** The provider after the one this run used, when the row may move to it (never for a replay). */
export const nextProvider = (run: ChannelRun, row: DeliveryRecord): Transport | undefined => {
  if (isReplay(row)) return undefined;
  const chain = providersFor(run.ctx, run.channel);
  const at = chain.findIndex((t) => t.name === run.transport.name);
  return at >= 0 ? chain[at + 1] : undefined;
};
