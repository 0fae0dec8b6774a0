import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { createArchiver } from '../../lib/archive/archiver.js';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { s3Client } from '../../lib/aws/storageClients.js';
import { functionConfig } from '../../lib/config.js';
import { ConfigurationError } from '../../lib/domain/errors.js';
import { archiveRetentionDaysOf, PurposeRegistry } from '../../lib/domain/purposes.js';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';

/**
 * Archiver Lambda: the ledger table's stream → S3 (Object Lock). Only wiring lives here; the logic is
 * lib/archive/archiver.ts. Bisect-on-error, retries, maximum record age and the on-failure destination
 * are event-source settings (infra/); IteratorAge is the alarm that says the archive is falling behind.
 */
const config = functionConfig('archive');
if (!config.archiveBucket)
  throw new ConfigurationError('SENDPROOF_ARCHIVE_BUCKET is required by the archiver');

const logger = new Logger({ serviceName: SERVICE_NAME });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });

const archive = createArchiver({
  // Pass the one shared client builder's client, so local endpoints and retries are configured once.
  s3: s3Client(clientOptionsFor(config, 'endpointS3')),
  bucket: config.archiveBucket,
  ...(config.archiveMirrorDir ? { mirrorDir: config.archiveMirrorDir } : {}),
  logger,
  retentionDaysOf: archiveRetentionDaysOf(
    PurposeRegistry.withOverrides(config.purposes),
    config.archiveRetentionDays ?? 365,
  ),
  onArchived: (count) => metrics.addMetric(METRIC.transitionsArchived, MetricUnit.Count, count),
});

export const handler = async (
  event: DynamoDBStreamEvent,
  context: Context,
): Promise<DynamoDBBatchResponse> => {
  logger.addContext(context);
  try {
    return await archive(event, context);
  } finally {
    metrics.publishStoredMetrics();
  }
};
