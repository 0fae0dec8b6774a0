import { checkCountry, countryLabel } from '../domain/countryRules.js';
import type { Channel, PurposePolicy } from '../domain/purposes.js';
import type { Pacer } from './Pacer.js';
import { BREAKER_METRIC, type SpendBreaker } from './SpendBreaker.js';

/**
 * The rate-control and anti-abuse layer in front of the provider call (seed 000's "rate control in front
 * of the durable claim", seed 004's geographic rules and spend breakers), checked by the dispatcher's
 * read-only gates before the claim's dispatch and before every resumed attempt:
 *
 *   SMS country allow-list (purpose) → tenant quota + transport pace (shared tokens) → SMS spend breaker
 *
 * A refusal becomes `blocked` with the reason; a missing token becomes `retry_wait` (`paced`) with no
 * attempt spent. Metrics carry the country code only, never the number.
 */
export type AdmissionVerdict =
  | { kind: 'go' }
  | { kind: 'refuse'; why: string }
  | { kind: 'wait'; until: number; why: 'paced' };

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

export class Admission {
  constructor(private readonly deps: AdmissionDeps) {}

  async admit(request: AdmissionRequest): Promise<AdmissionVerdict> {
    const { channel, policy, phone } = request;
    const sms = channel === 'sms' && phone !== undefined;
    // The number is parsed only when a rule needs its country (an allow-list or a breaker).
    const needsCountry = sms && (policy.smsCountries !== undefined || policy.smsSpendBreaker !== undefined);
    const country = needsCountry ? checkCountry(policy.smsCountries, phone) : undefined;
    if (country && !country.allowed) {
      this.deps.metrics?.count(ADMISSION_METRIC.countryRefused, 1, {
        purpose: policy.purpose,
        country: countryLabel(country.country),
      });
      return { kind: 'refuse', why: `country_not_allowed:${countryLabel(country.country)}` };
    }
    const pacer = this.deps.pacer;
    if (pacer?.applies(request.transport, request.tenant)) {
      const token = await pacer.acquire(request.transport, request.tenant);
      if (!token.ok) return { kind: 'wait', until: token.retryAt, why: 'paced' };
    }
    if (sms && policy.smsSpendBreaker && this.deps.breaker) {
      const label = countryLabel(country?.country);
      const answer = await this.deps.breaker.count(
        policy.purpose,
        label,
        policy.smsSpendBreaker,
        this.deps.now(),
      );
      if (!answer.ok) {
        this.deps.metrics?.count(BREAKER_METRIC.refused, 1, { purpose: policy.purpose, country: label });
        return { kind: 'refuse', why: `spend_breaker_open:${label}` };
      }
    }
    return { kind: 'go' };
  }

  /** The provider's answer, for the pace (a throttle lowers it). */
  observe(transport: string, result: { kind: string; reason?: string }): void {
    this.deps.pacer?.observe(transport, result);
  }
}
