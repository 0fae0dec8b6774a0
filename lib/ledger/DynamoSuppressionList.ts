import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Channel } from '../domain/purposes.js';
import { suppressionReason } from './DynamoGateFacts.js';
import { NUMBER_TENANT, OPT_OUT_SOURCE } from './optOut.js';
import type { SuppressionDetails, SuppressionList } from './port.js';
import { SUPPRESSION_TABLE } from './tableDefinition.js';

/** One suppressed channel of a recipient, with where it came from. */
export interface SuppressionEntry {
  tenant: string;
  recipientRef: string;
  channel: Channel | '*';
  reason: string;
  source?: string;
  at?: number;
  by?: string;
}

/** One change to a recipient's suppressions (kept on the item: who added or removed what, and why). */
export interface SuppressionChange {
  op: 'add' | 'remove';
  channel: string;
  reason: string;
  source?: string;
  at: number;
  by: string;
  /** A `provider_opt_out` suppression lifted by an operator with `--force`. */
  forced?: boolean;
}

/**
 * Recipients (by opaque ref) who must not be contacted on a channel, or on any channel (`*`). One item
 * per recipient holds a map of suppressed channels → reason, so the check before every provider attempt
 * is a single strongly consistent GetItem (a bounce-driven suppression also stops pending retries).
 * `sources` says where each came from (provider event or operator, and when); `changes` keeps every add
 * and remove, so a removal is never silent.
 */
export class DynamoSuppressionList implements SuppressionList {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  private key(tenant: string, recipientRef: string) {
    return { [SUPPRESSION_TABLE.partitionKey]: `${tenant}:${recipientRef}` };
  }

  async isSuppressed(tenant: string, recipientRef: string, channel: Channel) {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: this.key(tenant, recipientRef),
        ProjectionExpression: 'channels',
        ConsistentRead: true,
      }),
    );
    const reason = suppressionReason(out.Item?.channels as Record<string, unknown> | undefined, channel);
    return reason ? { suppressed: true, reason } : { suppressed: false };
  }

  /**
   * Adds the channel once: a repeat (the same bounce delivered twice) changes nothing, and an existing
   * suppression keeps its first reason and source.
   */
  async suppress(
    tenant: string,
    recipientRef: string,
    channel: Channel | '*',
    reason: string,
    details: SuppressionDetails = { source: 'unspecified', at: Date.now(), by: 'unspecified' },
  ): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(tenant, recipientRef),
        UpdateExpression:
          'SET channels = if_not_exists(channels, :empty), sources = if_not_exists(sources, :empty), ' +
          'changes = if_not_exists(changes, :none), tenant = :tenant, recipientRef = :ref, updatedAt = :now',
        ExpressionAttributeValues: {
          ':empty': {},
          ':none': [],
          ':tenant': tenant,
          ':ref': recipientRef,
          ':now': details.at,
        },
      }),
    );
    const change: SuppressionChange = {
      op: 'add',
      channel,
      reason,
      source: details.source,
      at: details.at,
      by: details.by,
    };
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(tenant, recipientRef),
          UpdateExpression:
            'SET channels.#channel = :reason, sources.#channel = :source, changes = list_append(changes, :change)',
          ConditionExpression: 'attribute_not_exists(channels.#channel)',
          ExpressionAttributeNames: { '#channel': channel },
          ExpressionAttributeValues: {
            ':reason': reason,
            ':source': { source: details.source, at: details.at, by: details.by },
            ':change': [change],
          },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /**
   * Removes one channel's suppression, recording the operator and the reason. `not_suppressed` if it was
   * not there; `needs_force` (nothing changed) when it came from the provider's opt-out list
   * (`provider_opt_out`) and `force` is not given: carriers require a STOP to be honoured, so lifting one
   * by hand is a deliberate, recorded decision (the change says `forced`).
   */
  async remove(
    tenant: string,
    recipientRef: string,
    channel: Channel | '*',
    reason: string,
    operator: string,
    now = Date.now(),
    options: { force?: boolean } = {},
  ): Promise<'removed' | 'not_suppressed' | 'needs_force'> {
    const change: SuppressionChange = {
      op: 'remove',
      channel,
      reason,
      at: now,
      by: `operator:${operator}`,
      ...(options.force ? { forced: true } : {}),
    };
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(tenant, recipientRef),
          UpdateExpression:
            'REMOVE channels.#channel, sources.#channel SET changes = list_append(if_not_exists(changes, :none), :change), updatedAt = :now',
          ConditionExpression: options.force
            ? 'attribute_exists(channels.#channel)'
            : 'attribute_exists(channels.#channel) AND (attribute_not_exists(sources.#channel.#source) OR sources.#channel.#source <> :optOut)',
          ExpressionAttributeNames: {
            '#channel': channel,
            ...(options.force ? {} : { '#source': 'source' }),
          },
          ExpressionAttributeValues: {
            ':change': [change],
            ':none': [],
            ':now': now,
            ...(options.force ? {} : { ':optOut': OPT_OUT_SOURCE }),
          },
        }),
      );
      return 'removed';
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const out = await this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: this.key(tenant, recipientRef),
          ProjectionExpression: 'channels.#channel',
          ExpressionAttributeNames: { '#channel': channel },
          ConsistentRead: true,
        }),
      );
      const channels = (out.Item?.channels ?? {}) as Record<string, unknown>;
      return channel in channels ? 'needs_force' : 'not_suppressed';
    }
  }

  /**
   * Remembers, on a number's opt-out entry (lib/ledger/optOut.ts), a recipient whose own SMS entry the
   * same opt-out wrote (a refused send names the recipient): the number's opt-in then lifts theirs too.
   */
  async linkOptOut(numberRef: string, tenant: string, recipientRef: string): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(NUMBER_TENANT, numberRef),
        UpdateExpression: 'ADD optOutRecipients :r',
        ExpressionAttributeValues: { ':r': new Set([`${tenant}:${recipientRef}`]) },
      }),
    );
  }

  /**
   * The provider's opt-in (a START reply): lifts the channel's suppression only when it came from the
   * provider's opt-out list, and the entries of the recipients linked to it (`linkOptOut`) on the same
   * terms. An operator's or a bounce's suppression stays: an opt-in to a sender's texts is not a decision
   * about them. True when the entry itself was lifted.
   */
  async liftOptOut(
    tenant: string,
    recipientRef: string,
    channel: Channel | '*',
    details: SuppressionDetails & { reason: string },
  ): Promise<boolean> {
    const change: SuppressionChange = {
      op: 'remove',
      channel,
      reason: details.reason,
      source: details.source,
      at: details.at,
      by: details.by,
    };
    const lift = async (pk: Record<string, string>, dropLinks: boolean) => {
      try {
        const out = await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: pk,
            UpdateExpression: `REMOVE channels.#channel, sources.#channel${dropLinks ? ', optOutRecipients' : ''} SET changes = list_append(if_not_exists(changes, :none), :change), updatedAt = :now`,
            ConditionExpression: 'sources.#channel.#source = :optOut',
            ExpressionAttributeNames: { '#channel': channel, '#source': 'source' },
            ExpressionAttributeValues: {
              ':change': [change],
              ':none': [],
              ':now': details.at,
              ':optOut': OPT_OUT_SOURCE,
            },
            ReturnValues: 'ALL_OLD',
          }),
        );
        return { lifted: true, linked: [...((out.Attributes?.optOutRecipients as Set<string>) ?? [])] };
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return { lifted: false, linked: [] };
        throw error;
      }
    };
    const own = await lift(this.key(tenant, recipientRef), true);
    for (const linked of own.linked) await lift({ [SUPPRESSION_TABLE.partitionKey]: linked }, false);
    return own.lifted;
  }

  /** Every suppressed channel, optionally of one tenant. A paginated scan: operator use only. */
  async list(tenant?: string): Promise<SuppressionEntry[]> {
    const entries: SuppressionEntry[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const item of out.Items ?? []) {
        const pk = String(item[SUPPRESSION_TABLE.partitionKey]);
        const itemTenant = typeof item.tenant === 'string' ? item.tenant : pk.slice(0, pk.indexOf(':'));
        if (tenant && itemTenant !== tenant) continue;
        const recipientRef =
          typeof item.recipientRef === 'string' ? item.recipientRef : pk.slice(pk.indexOf(':') + 1);
        const sources = (item.sources ?? {}) as Record<string, { source?: string; at?: number; by?: string }>;
        for (const [channel, reason] of Object.entries((item.channels ?? {}) as Record<string, string>)) {
          const source = sources[channel];
          entries.push({
            tenant: itemTenant,
            recipientRef,
            channel: channel as Channel | '*',
            reason,
            ...(source?.source ? { source: source.source } : {}),
            ...(source?.at !== undefined ? { at: source.at } : {}),
            ...(source?.by ? { by: source.by } : {}),
          });
        }
      }
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return entries.sort(
      (a, b) => a.tenant.localeCompare(b.tenant) || a.recipientRef.localeCompare(b.recipientRef),
    );
  }

  /** The changes made to one recipient's suppressions, oldest first. */
  async changes(tenant: string, recipientRef: string): Promise<SuppressionChange[]> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: this.key(tenant, recipientRef),
        ConsistentRead: true,
      }),
    );
    return (out.Item?.changes ?? []) as SuppressionChange[];
  }
}
