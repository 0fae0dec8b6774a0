import { AthenaClient } from '@aws-sdk/client-athena';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { PinpointSMSVoiceV2Client } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import { S3Client } from '@aws-sdk/client-s3';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The one place AWS clients are built. A local endpoint (DynamoDB Local, fauxqs, aws-ses-v2-local) is
 * passed in from config; in Lambda the endpoints are absent and the SDK's defaults apply.
 */
export interface ClientOptions {
  region: string;
  endpoint?: string;
}

const base = ({ region, endpoint }: ClientOptions) => ({
  region,
  ...(endpoint ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  maxAttempts: 3,
});

export const dynamoDocumentClient = (options: ClientOptions): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(new DynamoDBClient(base(options)), {
    marshallOptions: { removeUndefinedValues: true },
  });

export const dynamoClient = (options: ClientOptions): DynamoDBClient => new DynamoDBClient(base(options));

/** Local mode only: the archiver's stream poller reads DynamoDB Local's stream (in AWS, Lambda does). */
export const dynamoStreamsClient = (options: ClientOptions): DynamoDBStreamsClient =>
  new DynamoDBStreamsClient(base(options));

export const sqsClient = (options: ClientOptions): SQSClient => new SQSClient(base(options));

/** Path-style addressing: fauxqs serves S3 on one host, as AWS does with path-style requests. */
export const s3Client = (options: ClientOptions): S3Client =>
  new S3Client({ ...base(options), ...(options.endpoint ? { forcePathStyle: true } : {}) });

/** SES and SMS sends are never retried by the SDK: a retry must go through the ledger with the same key. */
export const sesClient = (options: ClientOptions): SESv2Client =>
  new SESv2Client({ ...base(options), maxAttempts: 1 });

export const smsV2Client = (options: ClientOptions): PinpointSMSVoiceV2Client =>
  new PinpointSMSVoiceV2Client({ ...base(options), maxAttempts: 1 });

/** The console's named audit queries in AWS (lib/console/athenaAuditQueries.ts). */
export const athenaClient = (options: ClientOptions): AthenaClient => new AthenaClient(base(options));
