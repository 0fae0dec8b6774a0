import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { base, type ClientOptions } from './clientOptions.js';
import { withCommandLog } from './commandLog.js';

/**
 * The one place AWS clients are built (the others: messagingClients, storageClients, athenaClient,
 * kmsClient, each apart so a function loads only the SDKs it uses). Options: lib/aws/clientOptions.ts.
 */
export { base, type ClientOptions, clientOptionsFor } from './clientOptions.js';

export const dynamoDocumentClient = (options: ClientOptions): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(withCommandLog(new DynamoDBClient(base(options)), options.caller), {
    marshallOptions: { removeUndefinedValues: true },
  });

export const dynamoClient = (options: ClientOptions): DynamoDBClient =>
  withCommandLog(new DynamoDBClient(base(options)), options.caller);

export const sqsClient = (options: ClientOptions): SQSClient =>
  withCommandLog(new SQSClient(base(options)), options.caller);
