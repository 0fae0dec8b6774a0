import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { sendResolved } from '../aws/resolvedCommands.js';
import type { Channel } from '../domain/purposes.js';
import type { GateFacts, GateFactsReader } from './port.js';
import { LEDGER_TABLE, SUPPRESSION_TABLE } from './tableDefinition.js';

/** BatchGetItem takes at most 100 keys per request. */
const MAX_KEYS = 100;
const FLOW_PREFIX = 'flow#';

/**
 * The read-only gates of one queue batch, in one request: a strongly consistent BatchGetItem over the
 * suppression table (one item per recipient) and the ledger table (fallback-flow pointers). A batch of
 * ten intents then costs one read request instead of ten or twenty.
 */
export class DynamoGateFacts implements GateFactsReader {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tables: { ledger: string; suppression: string },
  ) {}

  async read(
    recipients: ReadonlyArray<{ tenant: string; recipientRef: string }>,
    logicalKeys: readonly string[],
  ): Promise<GateFacts> {
    const suppressionKeys = recipients.map((r) => `${r.tenant}:${r.recipientRef}`);
    const flowKeys = logicalKeys.map((k) => `${FLOW_PREFIX}${k}`);
    const channelsByRecipient = new Map<string, Record<string, unknown>>();
    const flows = new Set<string>();
    const read = new Set<string>();
    const readFlows = new Set<string>();
    const requests: Array<{ table: string; key: string }> = [
      ...suppressionKeys.map((key) => ({ table: this.tables.suppression, key })),
      ...flowKeys.map((key) => ({ table: this.tables.ledger, key })),
    ];
    for (let i = 0; i < requests.length; i += MAX_KEYS) {
      let pending: Record<
        string,
        { Keys: Array<Record<string, unknown>>; ConsistentRead: boolean; ProjectionExpression?: string }
      > = {};
      for (const { table, key } of requests.slice(i, i + MAX_KEYS)) {
        const partitionKey =
          table === this.tables.ledger ? LEDGER_TABLE.partitionKey : SUPPRESSION_TABLE.partitionKey;
        pending[table] ??= { Keys: [], ConsistentRead: true, ProjectionExpression: '#pk, channels' };
        pending[table].Keys.push({ [partitionKey]: key });
      }
      // Unprocessed keys (throttling) are asked again until none is left.
      for (let round = 0; Object.keys(pending).length > 0; round++) {
        if (round > 0) await new Promise((r) => setTimeout(r, Math.min(1_000, 25 * 2 ** round)));
        // Once per queue batch on the happy path: the handler is resolved once (lib/aws/resolvedCommands.ts).
        const out = await sendResolved(this.client, BatchGetCommand, {
          RequestItems: Object.fromEntries(
            Object.entries(pending).map(([table, spec]) => [
              table,
              { ...spec, ExpressionAttributeNames: { '#pk': 'pk' } },
            ]),
          ),
        });
        for (const [table, items] of Object.entries(out.Responses ?? {})) {
          for (const item of items) {
            const pk = String(item.pk);
            if (table === this.tables.ledger) flows.add(pk.slice(FLOW_PREFIX.length));
            else channelsByRecipient.set(pk, (item.channels ?? {}) as Record<string, unknown>);
          }
        }
        pending = (out.UnprocessedKeys ?? {}) as typeof pending;
      }
    }
    for (const key of suppressionKeys) read.add(key);
    for (const key of logicalKeys) readFlows.add(key);
    return {
      suppression: (tenant: string, recipientRef: string, channel: Channel) => {
        const key = `${tenant}:${recipientRef}`;
        if (!read.has(key)) return undefined;
        const reason = suppressionReason(channelsByRecipient.get(key), channel);
        return reason ? { suppressed: true, reason } : { suppressed: false };
      },
      flowExists: (logicalKey: string) => (readFlows.has(logicalKey) ? flows.has(logicalKey) : undefined),
    };
  }
}

/** The reason a recipient's channel map gives for a channel (or for every channel, `*`). */
export const suppressionReason = (
  channels: Readonly<Record<string, unknown>> | undefined,
  channel: Channel,
): string | undefined => {
  const entry = channels?.[channel] ?? channels?.['*'];
  if (entry === undefined) return undefined;
  if (typeof entry === 'string') return entry;
  const reason = (entry as { reason?: unknown }).reason;
  return typeof reason === 'string' ? reason : 'listed';
};
