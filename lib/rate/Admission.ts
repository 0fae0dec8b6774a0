import { countryLabel } from '../domain/countryLabel.js';
import type { CountryVerdict } from '../domain/countryRules.js';
import type { Channel, PurposePolicy } from '../domain/purposes.js';
import type { Pacer, PaceToken } from './Pacer.js';
import { BREAKER_METRIC, type BreakerPolicy, type SpendBreaker } from './SpendBreaker.js';

/**
 * The rate-control and anti-abuse layer in front of the provider call (seed 000's "rate control in front
 * of the durable claim", seed 004's geographic rules and spend breakers), in two steps:
 *
 *   before the claim (`beforeClaim`):  SMS country allow-list (purpose) → tenant quota + transport pace
 *   before the send (`beforeSend`):    SMS spend breaker, after the durable `dispatching` write
 *
 * The breaker counts a send only once this dispatcher owns it (its `dispatching` write succeeded), so a
 * duplicate publish or a redelivery whose claim conflicts is never counted (issue 26 item 6: a storm of
 * duplicates tripped the breaker with no real send). Pace tokens must be taken before the claim (a
 * missing token parks the row without spending an attempt); one an admitted send does not spend goes
 * back with `refund`.
 *
 * A refusal becomes `blocked` with the reason; a missing token becomes `retry_wait` (`paced`) with no
 * attempt spent. Metrics carry the country code only, never the number.
 */
export type AdmissionVerdict =
  | { kind: 'go'; ticket?: AdmissionTicket }
  | { kind: 'refuse'; why: string }
  /** `paced`: no send token yet; `transport_hold:<reason>`: the transport is held (lib/rate/TransportHolds.ts). */
  | { kind: 'wait'; until: number; why: 'paced' | `transport_hold:${string}` };

/** What an admitted send holds until it is sent: its pace tokens and the breaker it must count in. */
export interface AdmissionTicket {
  tokens: readonly PaceToken[];
  spend?: { purpose: string; country: string; policy: BreakerPolicy };
}

export interface AdmissionRequest {
  channel: Channel;
  policy: PurposePolicy;
  tenant: string;
  transport: string;
  /** The raw number (SMS): read here in memory for its country, never stored or logged. */
  phone?: string;
}

export interface DimensionedMetrics {
  count(name: string, value?: number, dimensions?: Readonly<Record<string, string>>): void;
}

export const ADMISSION_METRIC = { countryRefused: 'SmsCountryRefused' } as const;

export interface AdmissionDeps {
  pacer?: Pacer;
  breaker?: SpendBreaker;
  now: () => number;
  metrics?: DimensionedMetrics;
}

/**
 * libphonenumber-js and its metadata (~120 KB of the bundle) load on the first number a rule needs the
 * country of, not at module init: a dispatcher whose purposes list no SMS countries and no spend breaker
 * never loads them (the cold start benchmark, bench/coldStart.ts, counts what is on the module path).
 */
let countryRules: Promise<typeof import('../domain/countryRules.js')> | undefined;
const checkCountry = async (
  allowList: readonly string[] | undefined,
  phone: string,
): Promise<CountryVerdict> => {
  countryRules ??= import('../domain/countryRules.js');
  return (await countryRules).checkCountry(allowList, phone);
};

export class Admission {
  constructor(private readonly deps: AdmissionDeps) {}

  /** Before the claim: the country allow-list, then the tenant quota and the transport pace. */
  async beforeClaim(request: AdmissionRequest): Promise<AdmissionVerdict> {
    const { channel, policy, phone } = request;
    const sms = channel === 'sms' && phone !== undefined;
    // The number is parsed only when a rule needs its country (an allow-list or a breaker).
    const needsCountry = sms && (policy.smsCountries !== undefined || policy.smsSpendBreaker !== undefined);
    const country = needsCountry ? await checkCountry(policy.smsCountries, phone) : undefined;
    if (country && !country.allowed) {
      this.deps.metrics?.count(ADMISSION_METRIC.countryRefused, 1, {
        purpose: policy.purpose,
        country: countryLabel(country.country),
      });
      return { kind: 'refuse', why: `country_not_allowed:${countryLabel(country.country)}` };
    }
    let tokens: readonly PaceToken[] = [];
    const pacer = this.deps.pacer;
    if (pacer?.applies(request.transport, request.tenant)) {
      const token = await pacer.acquire(request.transport, request.tenant);
      if (!token.ok) return { kind: 'wait', until: token.retryAt, why: 'paced' };
      tokens = token.tokens;
    }
    const breaker = sms && policy.smsSpendBreaker && this.deps.breaker ? policy.smsSpendBreaker : undefined;
    if (tokens.length === 0 && !breaker) return { kind: 'go' };
    return {
      kind: 'go',
      ticket: {
        tokens,
        ...(breaker
          ? { spend: { purpose: policy.purpose, country: countryLabel(country?.country), policy: breaker } }
          : {}),
      },
    };
  }

  /**
   * After the send's durable `dispatching` write, right before the provider call: the SMS spend breaker
   * counts this send, or refuses it while open. Only the owner of the attempt gets here, so the count is
   * of sends about to happen (a crash between the two writes leaves one uncounted `dispatching` row,
   * whose replay is not counted either; a count whose provider call then fails stays counted).
   */
  async beforeSend(
    ticket: AdmissionTicket | undefined,
  ): Promise<{ kind: 'go' } | { kind: 'refuse'; why: string }> {
    const spend = ticket?.spend;
    if (!spend || !this.deps.breaker) return { kind: 'go' };
    const answer = await this.deps.breaker.count(spend.purpose, spend.country, spend.policy, this.deps.now());
    if (answer.ok) return { kind: 'go' };
    this.deps.metrics?.count(BREAKER_METRIC.refused, 1, { purpose: spend.purpose, country: spend.country });
    return { kind: 'refuse', why: `spend_breaker_open:${spend.country}` };
  }

  /** An admitted send that will not happen (its claim conflicted, a later gate refused): tokens go back. */
  refund(ticket: AdmissionTicket | undefined): void {
    if (ticket?.tokens.length) this.deps.pacer?.refund(ticket.tokens);
  }

  /** The provider's answer, for the pace (a throttle lowers it). */
  observe(transport: string, result: { kind: string; reason?: string }): void {
    this.deps.pacer?.observe(transport, result);
  }
}
