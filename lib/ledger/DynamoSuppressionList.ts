import { BatchGetCommand, type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Channel } from '../domain/purposes.js';
import type { SuppressionList } from './port.js';
import { SUPPRESSION_TABLE } from './tableDefinition.js';

const keyOf = (tenant: string, recipientRef: string, channel: Channel | '*') =>
  `${tenant}:${recipientRef}:${channel}`;

/**
 * Recipients (by opaque ref) who must not be contacted on a channel, or on any channel (`*`).
 * Checked before every provider attempt, so a bounce-driven suppression also stops pending retries.
 */
export class DynamoSuppressionList implements SuppressionList {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async isSuppressed(tenant: string, recipientRef: string, channel: Channel) {
    const out = await this.client.send(
      new BatchGetCommand({
        RequestItems: {
          [this.tableName]: {
            Keys: [
              { [SUPPRESSION_TABLE.partitionKey]: keyOf(tenant, recipientRef, channel) },
              { [SUPPRESSION_TABLE.partitionKey]: keyOf(tenant, recipientRef, '*') },
            ],
            ConsistentRead: true,
          },
        },
      }),
    );
    const hit = out.Responses?.[this.tableName]?.[0] as { reason?: string } | undefined;
    return hit ? { suppressed: true, reason: hit.reason ?? 'suppressed' } : { suppressed: false };
  }

  async suppress(
    tenant: string,
    recipientRef: string,
    channel: Channel | '*',
    reason: string,
  ): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          [SUPPRESSION_TABLE.partitionKey]: keyOf(tenant, recipientRef, channel),
          reason,
          createdAt: Date.now(),
        },
      }),
    );
  }
}
