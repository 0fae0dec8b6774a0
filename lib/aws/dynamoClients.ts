import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { base, type ClientOptions } from './clientOptions.js';
import { withCommandLog } from './commandLog.js';

/** The DynamoDB clients (every function's floor). lib/aws/clients.ts re-exports them with the others. */
export const dynamoDocumentClient = (options: ClientOptions): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(withCommandLog(new DynamoDBClient(base(options)), options.caller), {
    marshallOptions: { removeUndefinedValues: true },
  });

export const dynamoClient = (options: ClientOptions): DynamoDBClient =>
  withCommandLog(new DynamoDBClient(base(options)), options.caller);
