import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { localLambdaContext } from '../lib/local/lambdaContext.js';
import { powertoolsTableInput } from './baselines.js';
import { type BenchDynamo, createTable } from './stack.js';

/**
 * The peer, for real: Powertools for AWS Lambda's idempotency utility (`makeIdempotent` with its
 * `DynamoDBPersistenceLayer`, Lambda context registered) on the same DynamoDB Local. The wrapped
 * function does nothing and keeps no history: this measures the utility's own bookkeeping (an
 * in-progress put and a completed update per call), against two bare conditional puts to its own table.
 */
export const powertoolsPeer = async (
  dynamo: BenchDynamo,
): Promise<{ call: (id: string) => Promise<void>; rawWrite: (id: string) => Promise<void> }> => {
  const tableName = await createTable(dynamo.raw, powertoolsTableInput, 'powertools-peer');
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: dynamo.raw });
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'id' });
  const context: Context = localLambdaContext('powertools-peer', 'us-east-1');
  config.registerLambdaContext(context);
  const handler = makeIdempotent(async (event: { id: string }, _context: Context) => ({ done: event.id }), {
    persistenceStore,
    config,
  });
  return {
    call: async (id: string) => {
      await handler({ id }, context);
    },
    // Powertools' own ceiling: a bare conditional put of a record of its shape to its own table (no
    // index, no stream), so its ratio is measured against the floor of its own writes, not the ledger's.
    rawWrite: async (id: string) => {
      await dynamo.doc.send(
        new PutCommand({
          TableName: tableName,
          Item: { id: `raw#${id}`, status: 'COMPLETED', expiration: 4_102_444_800, data: '{"done":true}' },
          ConditionExpression: 'attribute_not_exists(#id)',
          ExpressionAttributeNames: { '#id': 'id' },
        }),
      );
    },
  };
};
