import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ARCHIVE_PREFIX, ARCHIVE_TENANT_PARTITION, NO_TENANT } from '../../lib/archive/schema.js';
import { athenaClient } from '../../lib/aws/athenaClient.js';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { s3Client } from '../../lib/aws/storageClients.js';
import { functionConfig } from '../../lib/config.js';
import { athenaAuditQueries } from '../../lib/console/athenaAuditQueries.js';
import { systemClock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { SLO_METRIC } from '../../lib/slo/metrics.js';
import { createSloReadModel } from '../../lib/slo/readModel.js';

/**
 * The duplicate budget's measurement in AWS, daily (EventBridge Scheduler). A message accepted twice is
 * two lifetimes of one ledger row (re-created after its TTL): no stream record can tell, only the archive
 * can. So once a day this runs `slo-attainment` in Athena for every tenant and purpose over yesterday,
 * looking 35 days further back for an earlier copy, and publishes `DuplicateAcceptances` and
 * `AuditedAcceptances` (purpose, channel): the duplicate SLO's bad and total counts.
 */
const config = functionConfig('sloAudit');
const logger = new Logger({ serviceName: SERVICE_NAME });
const purposes = PurposeRegistry.withOverrides(config.purposes);
const DAY_MS = 86_400_000;
export const DUPLICATE_LOOKBACK_DAYS = 35;

/** The tenants the archive has partitions for (`transitions/tenant=<t>/`). */
const tenants = async (): Promise<string[]> => {
  const s3 = s3Client(clientOptionsFor(config, 'endpointS3'));
  const found: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: config.archiveBucket,
        Prefix: ARCHIVE_PREFIX,
        Delimiter: '/',
        ...(token ? { ContinuationToken: token } : {}),
      }),
    );
    for (const prefix of page.CommonPrefixes ?? []) {
      const match = new RegExp(`^${ARCHIVE_PREFIX}${ARCHIVE_TENANT_PARTITION.name}=([^/]+)/$`).exec(
        prefix.Prefix ?? '',
      );
      if (match && match[1] !== NO_TENANT) found.push(match[1]!);
    }
    token = page.NextContinuationToken;
  } while (token);
  return found;
};

export const handler = async () => {
  const until = Math.floor(systemClock.now() / DAY_MS) * DAY_MS;
  const model = createSloReadModel({
    run: athenaAuditQueries({
      client: athenaClient(clientOptionsFor(config, 'endpointAthena')),
      workGroup: config.athenaWorkGroup,
      database: config.athenaDatabase,
      timeoutMs: 4 * 60_000,
    }).run,
    purposes,
    clock: systemClock,
  });
  let duplicates = 0;
  for (const tenant of await tenants()) {
    const reports = await model.attainment({
      tenant,
      windowDays: 1,
      until,
      duplicateLookbackDays: DUPLICATE_LOOKBACK_DAYS,
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
  logger.info('SLO audit done', { day: new Date(until - DAY_MS).toISOString().slice(0, 10), duplicates });
  return { duplicates };
};
