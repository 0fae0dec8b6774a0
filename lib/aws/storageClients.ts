import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { S3Client } from '@aws-sdk/client-s3';
import { base, type ClientOptions } from './clientOptions.js';
import { withCommandLog } from './commandLog.js';

/*
 * S3 and DynamoDB Streams clients, apart from lib/aws/clients.ts so that the dispatcher (which reads S3
 * only for an intent with an s3:// attachment) loads the S3 SDK on first use, not at module init.
 */

/** Local mode only: the archiver's stream poller reads DynamoDB Local's stream (in AWS, Lambda does). */
export const dynamoStreamsClient = (options: ClientOptions): DynamoDBStreamsClient =>
  withCommandLog(new DynamoDBStreamsClient(base(options)), options.caller);

/** Path-style addressing: fauxqs serves S3 on one host, as AWS does with path-style requests. */
export const s3Client = (options: ClientOptions): S3Client =>
  withCommandLog(
    new S3Client({ ...base(options), ...(options.endpoint ? { forcePathStyle: true } : {}) }),
    options.caller,
  );
