import { appendFile } from 'node:fs/promises';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { isTerminal, STATES } from '../domain/states.js';
import type { DeliveryRecord } from '../ledger/port.js';
import type { Transport } from '../transports/port.js';
import type { AuditEntry, AuditLog, CapabilityLookup, LedgerStats, SuppressionEntry } from './ports.js';

/**
 * Rows by state with a paginated, projected scan (the console's overview; an operator read, never a hot
 * path). The age of a non-terminal row counts from the time it entered its state (`attnAt` for rows in
 * the attention index, `updatedAt` otherwise; a `retry_wait` row's `attnAt` is its next attempt).
 */
export const dynamoLedgerStats =
  (client: DynamoDBDocumentClient, tableName: string, now: () => number) =>
  async (): Promise<LedgerStats> => {
    const stats: LedgerStats = { rows: 0, byState: {}, oldestAgeSeconds: {} };
    const at = now();
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await client.send(
        new ScanCommand({
          TableName: tableName,
          ProjectionExpression: '#s, attnAt, updatedAt',
          ExpressionAttributeNames: { '#s': 'state' },
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const row of (out.Items ?? []) as Partial<DeliveryRecord>[]) {
        if (!row.state || !STATES.includes(row.state)) continue; // fallback-flow pointers have no state
        stats.rows += 1;
        stats.byState[row.state] = (stats.byState[row.state] ?? 0) + 1;
        if (isTerminal(row.state)) continue;
        const since = row.state !== 'retry_wait' && row.attnAt !== undefined ? row.attnAt : row.updatedAt;
        if (since === undefined) continue;
        const age = Math.max(0, Math.round((at - since) / 1000));
        stats.oldestAgeSeconds[row.state] = Math.max(stats.oldestAgeSeconds[row.state] ?? 0, age);
      }
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return stats;
  };

/** The suppression table, read whole (it holds opaque recipient refs and reasons only). */
export const dynamoSuppressions =
  (client: DynamoDBDocumentClient, tableName: string) => async (): Promise<SuppressionEntry[]> => {
    const items: SuppressionEntry[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await client.send(
        new ScanCommand({ TableName: tableName, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
      );
      for (const item of out.Items ?? []) {
        const pk = String(item.pk ?? '');
        const split = pk.indexOf(':');
        items.push({
          tenant: split > 0 ? pk.slice(0, split) : pk,
          recipientRef: split > 0 ? pk.slice(split + 1) : '',
          channels: Object.fromEntries(
            Object.entries((item.channels ?? {}) as Record<string, unknown>).map(([k, v]) => [k, String(v)]),
          ),
          ...(typeof item.updatedAt === 'number' ? { updatedAt: item.updatedAt } : {}),
        });
      }
      startKey = out.LastEvaluatedKey;
      if (items.length >= 1000) break;
    } while (startKey);
    return items.sort((a, b) => (b.updatedAt ?? 0) - (a.updatedAt ?? 0));
  };

export const sqsQueueDepth = (sqs: SQSClient, queueUrl: string) => async (): Promise<number> => {
  const out = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(out.Attributes?.ApproximateNumberOfMessages ?? 0);
};

/** What each configured transport can do, by the name a row records (`ses`, `rest`, …) and channel. */
export const capabilitiesOf =
  (transports: { email: Transport; sms: Transport }): CapabilityLookup =>
  (name, channel) => {
    const transport = transports[channel];
    return name === undefined || transport.name === name ? transport.capabilities : undefined;
  };

/** Local: one JSON line per entry in a file (`.local/console-audit.jsonl`). */
export const jsonLinesAuditLog = (file: string): AuditLog => ({
  record: (entry) => appendFile(file, `${JSON.stringify(entry)}\n`),
});

/** Lambda: one structured line on stdout (CloudWatch Logs), tagged so a metric filter can find it. */
export const stdoutAuditLog = (): AuditLog => ({
  record: (entry) => {
    process.stdout.write(`${JSON.stringify({ console_audit: true, ...entry })}\n`);
  },
});

export const memoryAuditLog = (): AuditLog & { entries: AuditEntry[] } => {
  const entries: AuditEntry[] = [];
  return { entries, record: (entry) => void entries.push(entry) };
};
