import { Logger } from '@aws-lambda-powertools/logger';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ARCHIVE_PREFIX, ARCHIVE_TENANT_PARTITION, NO_TENANT } from '../../lib/archive/schema.js';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { s3Client } from '../../lib/aws/storageClients.js';
import { functionConfig } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { SERVICE_NAME } from '../../lib/observability.js';
import { onFirstUse } from '../../lib/onFirstUse.js';

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
// The second step (Athena, the named queries, the metrics) loads once the first found a tenant to audit.
const attainment = onFirstUse(() => import('./attainment.js'));

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
  const found = await tenants();
  const duplicates = found.length
    ? await (await attainment()).auditTenants({
        config,
        purposes,
        logger,
        tenants: found,
        until,
        duplicateLookbackDays: DUPLICATE_LOOKBACK_DAYS,
      })
    : 0;
  logger.info('SLO audit done', { day: new Date(until - DAY_MS).toISOString().slice(0, 10), duplicates });
  return { duplicates };
};
