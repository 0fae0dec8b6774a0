import type { Clock } from '../domain/clock.js';
import { type PurposeRegistry, sloOf } from '../domain/purposes.js';
import { latencyBudget, type Slo } from './objectives.js';

/** Runs a named archive query (`queries/*.sql`) with string arguments: DuckDB locally, Athena in AWS. */
export type RunNamedQuery = (
  name: string,
  args: readonly string[],
) => Promise<{ rows: Array<Record<string, unknown>> }>;

export const SLO_QUERY = 'slo-attainment';

/** One objective over one window: how many messages it judged, how many met it, and the budget left. */
export interface ObjectiveAttainment {
  /** Fraction that must meet it (a duplicate budget of 1 in 100,000 is 0.99999). */
  target: number;
  /** Messages the objective judged (for duplicates: messages accepted). */
  eligible: number;
  good: number;
  bad: number;
  /** good ÷ eligible; null when nothing was judged. */
  attainment: number | null;
  /** Messages that may miss it in this window: eligible × (1 − target). */
  budget: number;
  /** budget − bad, in messages (negative: overspent). */
  budgetLeft: number;
  /** budgetLeft ÷ budget; null when the budget is 0 (nothing judged). */
  budgetLeftFraction: number | null;
}

export interface ChannelAttainment {
  channel: string;
  accepted: ObjectiveAttainment;
  /** Absent when the purpose declares no delivery objective. */
  delivered?: ObjectiveAttainment;
  duplicates: ObjectiveAttainment;
  /** Accepted messages whose channel has not reported delivery either way (not judged). */
  deliveryUnreported: number;
  /** p99 of request → provider acceptance, ms (null: none accepted). */
  acceptP99Ms: number | null;
}

export interface PurposeAttainment {
  purpose: string;
  slo: Slo;
  window: { fromMs: number; toMs: number; days: number };
  /** Every channel together. */
  total: Omit<ChannelAttainment, 'channel' | 'acceptP99Ms'>;
  channels: ChannelAttainment[];
}

export interface SloRequest {
  tenant: string;
  /** Default: every registered purpose. */
  purposes?: readonly string[];
  /** Default: each purpose's own `slo.windowDays`. */
  windowDays?: number;
  /** End of the window, epoch ms (default: now). */
  until?: number;
  /**
   * How many days before the window the duplicate count looks for an earlier copy of a message accepted
   * in it (default 0: only inside the window). More days read more of the archive.
   */
  duplicateLookbackDays?: number;
}

/**
 * The SLO read model: per purpose, the objective, the measured attainment and the budget left over a
 * rolling window, computed by the named query `slo-attainment` on the archive (the same SQL on DuckDB
 * and Athena). The console's chart and `sendproof slo` both read it.
 */
export interface SloReadModel {
  attainment(request: SloRequest): Promise<PurposeAttainment[]>;
}

const DAY_MS = 86_400_000;
const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const num = (value: unknown): number => (typeof value === 'number' ? value : Number(value ?? 0)) || 0;

export const objectiveAttainment = (target: number, eligible: number, good: number): ObjectiveAttainment => {
  const bad = eligible - good;
  const budget = latencyBudget({ target, withinSeconds: 1 }, eligible);
  return {
    target,
    eligible,
    good,
    bad,
    attainment: eligible > 0 ? good / eligible : null,
    budget,
    budgetLeft: budget - bad,
    budgetLeftFraction: budget > 0 ? (budget - bad) / budget : null,
  };
};

interface Counts {
  acceptanceDecided: number;
  acceptanceGood: number;
  deliveryDecided: number;
  deliveryGood: number;
  deliveryUnreported: number;
  acceptedMessages: number;
  duplicateMessages: number;
}

const countsOf = (row: Record<string, unknown>): Counts => ({
  acceptanceDecided: num(row.acceptance_decided),
  acceptanceGood: num(row.acceptance_good),
  deliveryDecided: num(row.delivery_decided),
  deliveryGood: num(row.delivery_good),
  deliveryUnreported: num(row.delivery_unreported),
  acceptedMessages: num(row.accepted_messages),
  duplicateMessages: num(row.duplicate_messages),
});

const judged = (slo: Slo, c: Counts): Omit<ChannelAttainment, 'channel' | 'acceptP99Ms'> => ({
  accepted: objectiveAttainment(slo.accepted.target, c.acceptanceDecided, c.acceptanceGood),
  ...(slo.delivered
    ? { delivered: objectiveAttainment(slo.delivered.target, c.deliveryDecided, c.deliveryGood) }
    : {}),
  duplicates: objectiveAttainment(
    1 - 1 / slo.duplicates.atMostOneIn,
    c.acceptedMessages,
    c.acceptedMessages - c.duplicateMessages,
  ),
  deliveryUnreported: c.deliveryUnreported,
});

export const createSloReadModel = (deps: {
  run: RunNamedQuery;
  purposes: PurposeRegistry;
  clock: Clock;
}): SloReadModel => ({
  async attainment(request) {
    const until = request.until ?? deps.clock.now();
    const names = request.purposes ?? deps.purposes.names();
    const reports: PurposeAttainment[] = [];
    for (const purpose of names) {
      const slo = sloOf(deps.purposes.get(purpose));
      const days = request.windowDays ?? slo.windowDays;
      const fromMs = until - days * DAY_MS;
      const { rows } = await deps.run(SLO_QUERY, [
        request.tenant,
        day(fromMs - (request.duplicateLookbackDays ?? 0) * DAY_MS),
        day(until),
        purpose,
        String(fromMs),
        String(until),
        String(slo.accepted.withinSeconds * 1000),
        String((slo.delivered?.withinSeconds ?? 0) * 1000),
      ]);
      const perChannel = rows.map((row) => ({
        channel: String(row.channel),
        counts: countsOf(row),
        p99: row.accept_p99_ms,
      }));
      const sum = perChannel.reduce<Counts>(
        (t, c) => {
          for (const key of Object.keys(t) as Array<keyof Counts>) t[key] += c.counts[key];
          return t;
        },
        {
          acceptanceDecided: 0,
          acceptanceGood: 0,
          deliveryDecided: 0,
          deliveryGood: 0,
          deliveryUnreported: 0,
          acceptedMessages: 0,
          duplicateMessages: 0,
        },
      );
      reports.push({
        purpose,
        slo,
        window: { fromMs, toMs: until, days },
        total: judged(slo, sum),
        channels: perChannel.map((c) => ({
          channel: c.channel,
          ...judged(slo, c.counts),
          acceptP99Ms: c.p99 === null || c.p99 === undefined ? null : num(c.p99),
        })),
      });
    }
    return reports;
  },
});
