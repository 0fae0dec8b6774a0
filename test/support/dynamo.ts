import { randomUUID } from 'node:crypto';
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { dynamoClient, dynamoDocumentClient } from '../../lib/aws/clients.js';
import { ledgerCreateTableInput, suppressionCreateTableInput } from '../../lib/ledger/tableDefinition.js';

/** Clients pointed at the run's DynamoDB Local (started by test/support/globalSetup.ts). */
export const localDynamo = (): { raw: DynamoDBClient; doc: DynamoDBDocumentClient; endpoint: string } => {
  const endpoint = inject('dynamodbEndpoint');
  return {
    raw: dynamoClient({ region: 'us-east-1', endpoint }),
    doc: dynamoDocumentClient({ region: 'us-east-1', endpoint }),
    endpoint,
  };
};

/** Creates a fresh ledger table (same keys, index and stream as production) with a unique name. */
export const createLedgerTable = async (raw: DynamoDBClient, prefix = 'ledger'): Promise<string> => {
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  await raw.send(new CreateTableCommand(ledgerCreateTableInput(name)));
  return name;
};

export const createSuppressionTable = async (raw: DynamoDBClient): Promise<string> => {
  const name = `suppression-${randomUUID().slice(0, 8)}`;
  await raw.send(new CreateTableCommand(suppressionCreateTableInput(name)));
  return name;
};
