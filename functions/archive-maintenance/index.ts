import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { createDigests, type DigestSigner } from '../../lib/archive/digest.js';
import { drainFailures } from '../../lib/archive/failureQueue.js';
import type { FailedBatchInfo } from '../../lib/archive/LocalStreamPoller.js';
import { S3Store } from '../../lib/archive/store.js';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { sqsClient } from '../../lib/aws/queueClient.js';
import { s3Client } from '../../lib/aws/storageClients.js';
import { functionConfig } from '../../lib/config.js';
import { archiveRetentionDaysOf, PurposeRegistry } from '../../lib/domain/purposes.js';
import { SERVICE_NAME } from '../../lib/observability.js';
import { onFirstUse } from '../../lib/onFirstUse.js';

/**
 * Archive maintenance, hourly (EventBridge Scheduler): first the backfill of every stream batch the
 * archiver gave up on (its failure queue), then a signed digest for every partition of yesterday and
 * today that has objects no digest lists yet. Logic: lib/archive/backfill.ts and lib/archive/digest.ts.
 */
const config = functionConfig('archiveMaintenance');
const logger = new Logger({ serviceName: SERVICE_NAME });
const s3 = s3Client(clientOptionsFor(config, 'endpointS3'));
const sqs = sqsClient(clientOptionsFor(config, 'endpointSqs'));
const DAY_MS = 86_400_000;
// The KMS client loads on the first digest to sign: an hour whose partitions are all listed already signs
// nothing. A failed load fails that digest (createDigests throws, the run fails) and the next run loads again.
const kms = onFirstUse(async () => {
  const [{ kmsSigner }, { kmsClient }] = await Promise.all([
    import('../../lib/archive/kmsSigner.js'),
    import('../../lib/aws/kmsClient.js'),
  ]);
  return kmsSigner(kmsClient(clientOptionsFor(config)), config.digestKeyId);
});
// The backfill (a Scan of the ledger, so the DynamoDB client) loads on the first failed batch the queue
// holds: rare by design (an alarm watches the queue). A failed load fails that batch, which stays queued.
const ledgerBackfill = onFirstUse(async () => {
  const [{ backfillBatch }, { dynamoDocumentClient }] = await Promise.all([
    import('../../lib/archive/backfill.js'),
    import('../../lib/aws/dynamoClients.js'),
  ]);
  const options = {
    doc: dynamoDocumentClient(clientOptionsFor(config, 'endpointDynamoDb')),
    table: config.ledgerTable,
    writer: {
      s3,
      bucket: config.archiveBucket,
      retentionDaysOf: archiveRetentionDaysOf(
        PurposeRegistry.withOverrides(config.purposes),
        config.archiveRetentionDays ?? 365,
      ),
    },
  };
  return (batch: FailedBatchInfo) => backfillBatch(options, batch);
});
const signer: DigestSigner = {
  keyId: config.digestKeyId,
  sign: async (message) => (await kms()).sign(message),
};

export const handler = async (_event: unknown, context: Context) => {
  logger.addContext(context);
  const backfill = await drainFailures({
    sqs,
    queueUrl: config.archiveFailuresUrl,
    backfill: async (batch) => (await ledgerBackfill())(batch),
  });
  if (backfill.failed) logger.error('archive backfill incomplete', { ...backfill, objects: undefined });
  const now = Date.now();
  const digests = await createDigests({
    store: new S3Store(s3, config.archiveBucket),
    signer,
    from: new Date(now - DAY_MS).toISOString().slice(0, 10),
    to: new Date(now).toISOString().slice(0, 10),
  });
  logger.info('archive maintenance done', {
    backfilledBatches: backfill.batches,
    backfilledTransitions: backfill.transitions,
    digests: digests.length,
  });
  return { backfill: { batches: backfill.batches, failed: backfill.failed }, digests: digests.length };
};
