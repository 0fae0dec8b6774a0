import type { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { athenaClient } from '../../lib/aws/athenaClient.js';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import type { functionConfig } from '../../lib/config.js';
import { athenaAuditQueries } from '../../lib/console/athenaAuditQueries.js';
import { systemClock } from '../../lib/domain/clock.js';
import type { PurposeRegistry } from '../../lib/domain/purposes.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { SLO_METRIC } from '../../lib/slo/metrics.js';
import { createSloReadModel } from '../../lib/slo/readModel.js';

/**
 * The SLO audit's second step (functions/slo-audit/index.ts): `slo-attainment` in Athena for each tenant
 * the archive has, and the duplicate budget's metrics. Its own chunk, loaded once the first step found a
 * tenant: the Athena client, the named queries and the metrics code are not read at module init.
 */
export const auditTenants = async (options: {
  config: ReturnType<typeof functionConfig<'sloAudit'>>;
  purposes: PurposeRegistry;
  logger: Logger;
  tenants: readonly string[];
  until: number;
  duplicateLookbackDays: number;
}): Promise<number> => {
  const { config, logger, until } = options;
  const model = createSloReadModel({
    run: athenaAuditQueries({
      client: athenaClient(clientOptionsFor(config, 'endpointAthena')),
      workGroup: config.athenaWorkGroup,
      database: config.athenaDatabase,
      timeoutMs: 4 * 60_000,
    }).run,
    purposes: options.purposes,
    clock: systemClock,
  });
  let duplicates = 0;
  for (const tenant of options.tenants) {
    const reports = await model.attainment({
      tenant,
      windowDays: 1,
      until,
      duplicateLookbackDays: options.duplicateLookbackDays,
    });
    for (const report of reports) {
      // Per purpose and channel (the dashboard), and per purpose alone (the SLO and its alarm).
      const sets = [
        ...report.channels.map((c) => ({
          dimensions: { purpose: report.purpose, channel: c.channel },
          counts: c.duplicates,
        })),
        { dimensions: { purpose: report.purpose }, counts: report.total.duplicates },
      ];
      for (const { dimensions, counts } of sets) {
        const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
        for (const [name, value] of Object.entries(dimensions)) metrics.addDimension(name, value);
        metrics.addMetric(SLO_METRIC.auditedAcceptances, MetricUnit.Count, counts.eligible);
        metrics.addMetric(SLO_METRIC.duplicateAcceptances, MetricUnit.Count, counts.bad);
        metrics.publishStoredMetrics();
      }
      duplicates += report.total.duplicates.bad;
      if (report.total.duplicates.bad > 0)
        logger.error('messages accepted twice', {
          tenant,
          purpose: report.purpose,
          duplicates: report.total.duplicates.bad,
        });
    }
  }
  return duplicates;
};
