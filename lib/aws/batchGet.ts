import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { SendproofError } from '../domain/errors.js';

/** BatchGetItem takes at most 100 keys per request. */
const MAX_KEYS = 100;
/** Rounds of unprocessed keys (throttling) asked again, with backoff, before the read fails loudly. */
const MAX_ROUNDS = 5;

/**
 * Items of one table by partition key (`pk`), as few BatchGetItem requests as the keys need (100 each);
 * unprocessed keys are asked again with a short backoff, and after MAX_ROUNDS the read fails with a
 * retryable error rather than returning a partial answer. A key with no item is absent from the map.
 * For the off-path reads of small items (the provider circuits); the dispatcher's
 * two-table gate read is lib/ledger/DynamoGateFacts.ts.
 */
export const batchGetByPk = async (
  client: DynamoDBDocumentClient,
  tableName: string,
  pks: readonly string[],
  options: { consistentRead?: boolean; projection?: readonly string[] } = {},
): Promise<Map<string, Record<string, unknown>>> => {
  const found = new Map<string, Record<string, unknown>>();
  const unique = [...new Set(pks)];
  const projection = options.projection ? ['pk', ...options.projection] : undefined;
  for (let i = 0; i < unique.length; i += MAX_KEYS) {
    let keys: Array<Record<string, unknown>> | undefined = unique
      .slice(i, i + MAX_KEYS)
      .map((pk) => ({ pk }));
    for (let round = 0; keys && keys.length > 0; round += 1) {
      if (round === MAX_ROUNDS)
        throw new SendproofError(
          'retryable',
          'batch_get_unprocessed',
          `BatchGetItem on ${tableName} left keys unprocessed ${MAX_ROUNDS} times`,
        );
      if (round > 0) await new Promise((r) => setTimeout(r, 25 * 2 ** round));
      const out: BatchGetCommandOutput = await client.send(
        new BatchGetCommand({
          RequestItems: {
            [tableName]: {
              Keys: keys,
              ConsistentRead: options.consistentRead ?? false,
              ...(projection
                ? {
                    ProjectionExpression: projection.map((_, n) => `#p${n}`).join(', '),
                    ExpressionAttributeNames: Object.fromEntries(
                      projection.map((name, n) => [`#p${n}`, name]),
                    ),
                  }
                : {}),
            },
          },
        }),
      );
      for (const item of out.Responses?.[tableName] ?? []) found.set(String(item.pk), item);
      keys = out.UnprocessedKeys?.[tableName]?.Keys;
    }
  }
  return found;
};
