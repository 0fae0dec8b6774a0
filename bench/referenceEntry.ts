// The cold start benchmark's reference (bench/coldStart.ts): the floor any DynamoDB-backed function pays,
// the SDK client and the document client, bundled with the same options as every Sendproof function.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export const client = DynamoDBDocumentClient.from(new DynamoDBClient({}));
