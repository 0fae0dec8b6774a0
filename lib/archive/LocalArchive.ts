import { CreateBucketCommand, S3ServiceException } from '@aws-sdk/client-s3';
import { dynamoClient, dynamoStreamsClient, s3Client } from '../aws/clients.js';
import { type ArchiveLogger, createArchiver } from './archiver.js';
import { LocalStreamPoller } from './LocalStreamPoller.js';

export interface LocalArchiveOptions {
  region: string;
  /** DynamoDB Local, e.g. http://127.0.0.1:8000 (the stream is read from the same endpoint). */
  dynamoEndpoint: string;
  /** Local S3 (fauxqs), e.g. http://127.0.0.1:4566. */
  s3Endpoint: string;
  ledgerTable: string;
  bucket: string;
  /** The folder `sendproof audit` reads; every object is written here too. */
  mirrorDir: string;
  logger: ArchiveLogger;
  intervalMs?: number;
}

/**
 * Local mode's archiver: the same handler as the Lambda, fed by a poller on DynamoDB Local's stream,
 * writing to the local S3 bucket (created if missing) and the mirror folder. Stop it with `stop()`.
 */
export const startLocalArchive = async (options: LocalArchiveOptions): Promise<LocalStreamPoller> => {
  const s3 = s3Client({ region: options.region, endpoint: options.s3Endpoint });
  try {
    await s3.send(new CreateBucketCommand({ Bucket: options.bucket }));
  } catch (error) {
    const owned = error instanceof S3ServiceException && error.name === 'BucketAlreadyOwnedByYou';
    if (!owned) throw error;
  }
  const endpoint = { region: options.region, endpoint: options.dynamoEndpoint };
  const streamArn = await LocalStreamPoller.streamArnOf(dynamoClient(endpoint), options.ledgerTable);
  const poller = new LocalStreamPoller({
    streams: dynamoStreamsClient(endpoint),
    streamArn,
    region: options.region,
    handler: createArchiver({
      s3,
      bucket: options.bucket,
      mirrorDir: options.mirrorDir,
      logger: options.logger,
    }),
    logger: options.logger,
    ...(options.intervalMs ? { intervalMs: options.intervalMs } : {}),
  });
  poller.start();
  return poller;
};
