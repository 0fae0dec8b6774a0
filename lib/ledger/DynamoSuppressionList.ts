import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Channel } from '../domain/purposes.js';
import { suppressionReason } from './DynamoGateFacts.js';
import type { SuppressionList } from './port.js';
import { SUPPRESSION_TABLE } from './tableDefinition.js';

/**
 * Recipients (by opaque ref) who must not be contacted on a channel, or on any channel (`*`). One item
 * per recipient holds a map of suppressed channels → reason, so the check before every provider attempt
 * is a single strongly consistent GetItem (a bounce-driven suppression also stops pending retries).
 */
export class DynamoSuppressionList implements SuppressionList {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async isSuppressed(tenant: string, recipientRef: string, channel: Channel) {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [SUPPRESSION_TABLE.partitionKey]: `${tenant}:${recipientRef}` },
        ProjectionExpression: 'channels',
        ConsistentRead: true,
      }),
    );
    const reason = suppressionReason(out.Item?.channels as Record<string, unknown> | undefined, channel);
    return reason ? { suppressed: true, reason } : { suppressed: false };
  }

  async suppress(
    tenant: string,
    recipientRef: string,
    channel: Channel | '*',
    reason: string,
  ): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { [SUPPRESSION_TABLE.partitionKey]: `${tenant}:${recipientRef}` },
        UpdateExpression: 'SET channels = if_not_exists(channels, :empty), updatedAt = :now',
        ExpressionAttributeValues: { ':empty': {}, ':now': Date.now() },
      }),
    );
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { [SUPPRESSION_TABLE.partitionKey]: `${tenant}:${recipientRef}` },
        UpdateExpression: 'SET channels.#channel = :reason',
        ExpressionAttributeNames: { '#channel': channel },
        ExpressionAttributeValues: { ':reason': reason },
      }),
    );
  }
}
