import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
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

export const base = ({ region, endpoint }: ClientOptions) => ({
  region,
  ...(endpoint ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  maxAttempts: 3,
});

export const dynamoDocumentClient = (options: ClientOptions): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(new DynamoDBClient(base(options)), {
    marshallOptions: { removeUndefinedValues: true },
  });

export const dynamoClient = (options: ClientOptions): DynamoDBClient => new DynamoDBClient(base(options));

export const sqsClient = (options: ClientOptions): SQSClient => new SQSClient(base(options));
