import type { Clock } from '../domain/clock.js';
import type { PurposeRegistry } from '../domain/purposes.js';
import {
  createSloReadModel,
  type ObjectiveAttainment,
  type PurposeAttainment,
  SLO_QUERY,
} from '../slo/readModel.js';
import type { AuditQueries, SloFigure, SloReadModel } from './ports.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** The objectives of one purpose (or one of its channels) as the panel's rows, in a fixed order. */
const figuresOf = (
  report: PurposeAttainment,
  objectives: {
    accepted: ObjectiveAttainment;
    delivered?: ObjectiveAttainment;
    duplicates: ObjectiveAttainment;
  },
  channel?: string,
): SloFigure[] => {
  const window = { from: iso(report.window.fromMs), to: iso(report.window.toMs), days: report.window.days };
  return (['accepted', 'delivered', 'duplicates'] as const).flatMap((objectiveName) => {
    const o = objectives[objectiveName];
    if (!o) return [];
    return [
      {
        purpose: report.purpose,
        ...(channel ? { channel } : {}),
        objectiveName,
        objective: o.target,
        attainment: o.attainment,
        budgetLeft: o.budgetLeftFraction,
        good: o.good,
        eligible: o.eligible,
        window,
      },
    ];
  });
};

/**
 * The read model's reports as the panel's rows: per purpose every channel together, then each channel
 * on its own when the purpose was measured on more than one (one channel's rows would repeat the total).
 */
export const sloFigures = (reports: readonly PurposeAttainment[]): SloFigure[] =>
  reports.flatMap((report) => [
    ...figuresOf(report, report.total),
    ...(report.channels.length > 1 ? report.channels.flatMap((c) => figuresOf(report, c, c.channel)) : []),
  ]);

/**
 * The console's SLO panel over the SLO read model (lib/slo/readModel.ts), which runs the named query
 * `slo-attainment` through the console's own archive queries: DuckDB over the mirror locally, Athena in
 * AWS. Each purpose over its own window, ending now; the purposes are asked for at once.
 */
export const sloPanelReadModel = (deps: {
  audit: AuditQueries;
  purposes: PurposeRegistry;
  clock: Clock;
}): SloReadModel => {
  const model = createSloReadModel({
    run: (name, args) => deps.audit.run(name, args),
    purposes: deps.purposes,
    clock: deps.clock,
  });
  return {
    source: `archive (${deps.audit.engine ?? 'named queries'}): named query ${SLO_QUERY}`,
    async attainment(tenant, now) {
      const reports = await Promise.all(
        deps.purposes
          .names()
          .map(async (purpose) => model.attainment({ tenant, purposes: [purpose], until: now })),
      );
      return sloFigures(reports.flat());
    },
  };
};
