import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { sendResolved } from '../lib/aws/resolvedCommands.js';
import { claimShapedRecord } from './stack.js';
import { median } from './stats.js';

/**
 * CPU µs per claim-shaped PutItem through the document client, with `client.send` (the middleware stack
 * resolved per request) and with lib/aws/resolvedCommands.ts (resolved once), alternating. The HTTP handler
 * answers in-process, so no socket and no server is in the figure: only what the SDK does per request,
 * which a busy shared machine disturbs far less than a rate.
 */
export const measureSdkSendCost = async (
  requests = 4_000,
  repeats = 5,
): Promise<{ sendUs: number[]; resolvedUs: number[] }> => {
  const answer = new TextEncoder().encode('{"ConsumedCapacity":{"TableName":"claims","CapacityUnits":1}}');
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 3,
      requestHandler: {
        handle: async () => ({
          response: {
            statusCode: 200,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: answer,
          },
        }),
      },
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  const record = claimShapedRecord();
  const input = (i: number) => ({
    TableName: 'claims',
    Item: { ...record, pk: `${record.pk}#${i}` },
    ConditionExpression: 'attribute_not_exists(#pk)',
    ExpressionAttributeNames: { '#pk': 'pk' },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    ReturnConsumedCapacity: 'TOTAL' as const,
  });
  const run = async (resolved: boolean) => {
    const before = process.cpuUsage();
    for (let i = 0; i < requests; i++) {
      if (resolved) await sendResolved(doc, PutCommand, input(i));
      else await doc.send(new PutCommand(input(i)));
    }
    const used = process.cpuUsage(before);
    return (used.user + used.system) / requests;
  };
  await run(false);
  await run(true);
  const sendUs: number[] = [];
  const resolvedUs: number[] = [];
  for (let k = 0; k < repeats; k++) {
    sendUs.push(await run(false));
    resolvedUs.push(await run(true));
  }
  return { sendUs, resolvedUs };
};

export const describeSdkSendCost = ({ sendUs, resolvedUs }: { sendUs: number[]; resolvedUs: number[] }) =>
  `SDK CPU per claim-shaped PutItem (no network): client.send ${median(sendUs).toFixed(0)} µs, resolved once ${median(resolvedUs).toFixed(0)} µs (medians of ${sendUs.length} alternating runs; ranges ${Math.min(...sendUs).toFixed(0)}–${Math.max(...sendUs).toFixed(0)} and ${Math.min(...resolvedUs).toFixed(0)}–${Math.max(...resolvedUs).toFixed(0)})`;
