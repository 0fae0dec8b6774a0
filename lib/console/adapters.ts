import { appendFile } from 'node:fs/promises';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { isTerminal, STATES } from '../domain/states.js';
import type { DeliveryRecord, Ledger } from '../ledger/port.js';
import type { Transport } from '../transports/port.js';
import type {
  AuditEntry,
  AuditLog,
  CapabilityLookup,
  LedgerStats,
  LedgerStatsSource,
  NotificationSearch,
  SearchField,
  SuppressionEntry,
} from './ports.js';

/** What the overview counts of one ledger item. */
type StatsItem = Pick<
  Partial<DeliveryRecord>,
  'state' | 'attnAt' | 'updatedAt' | 'tenant' | 'purpose' | 'channel'
>;

/** Accepted by a provider, as the archive's latency query counts it (a human's resolved_accepted is not). */
const ACCEPTED_STATES: readonly string[] = ['accepted'];

/**
 * Rows by state (of one tenant, when given) from items, and the age of the oldest row of each non-terminal
 * state. The age of a non-terminal row counts from the time it entered its state (`attnAt` for rows in
 * the attention index, `updatedAt` otherwise; a `retry_wait` row's `attnAt` is its next attempt).
 */
export class StatsAccumulator {
  private readonly stats: LedgerStats = { rows: 0, byState: {}, oldestAgeSeconds: {}, tenants: [] };
  private readonly tenants = new Set<string>();
  private readonly accepted = new Map<string, { purpose: string; channel: string; rows: number }>();
  constructor(
    private readonly at: number,
    private readonly tenant?: string,
  ) {}

  add(row: StatsItem): void {
    if (!row.state || !STATES.includes(row.state)) return; // fallback-flow pointers, seals: no state
    if (row.tenant) this.tenants.add(row.tenant);
    if (this.tenant !== undefined && row.tenant !== this.tenant) return;
    const stats = this.stats;
    stats.rows += 1;
    stats.byState[row.state] = (stats.byState[row.state] ?? 0) + 1;
    if (ACCEPTED_STATES.includes(row.state)) {
      const key = `${row.purpose}\u0000${row.channel}`;
      const entry = this.accepted.get(key) ?? {
        purpose: String(row.purpose),
        channel: String(row.channel),
        rows: 0,
      };
      entry.rows += 1;
      this.accepted.set(key, entry);
    }
    if (isTerminal(row.state)) return;
    const since = row.state !== 'retry_wait' && row.attnAt !== undefined ? row.attnAt : row.updatedAt;
    if (since === undefined) return;
    const age = Math.max(0, Math.round((this.at - since) / 1000));
    stats.oldestAgeSeconds[row.state] = Math.max(stats.oldestAgeSeconds[row.state] ?? 0, age);
  }

  result(): LedgerStats {
    return {
      ...this.stats,
      acceptedBy: [...this.accepted.values()].sort(
        (a, b) => a.purpose.localeCompare(b.purpose) || a.channel.localeCompare(b.channel),
      ),
      tenants: [...this.tenants].sort(),
    };
  }
}

/** The overview's ledger figures with a paginated, projected scan (an operator read, never a hot path). */
export const dynamoLedgerStats =
  (client: DynamoDBDocumentClient, tableName: string, now: () => number): LedgerStatsSource =>
  async (tenant) => {
    const stats = new StatsAccumulator(now(), tenant);
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await client.send(
        new ScanCommand({
          TableName: tableName,
          ProjectionExpression: '#s, attnAt, updatedAt, tenant, purpose, channel',
          ExpressionAttributeNames: { '#s': 'state' },
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const row of (out.Items ?? []) as StatsItem[]) stats.add(row);
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return stats.result();
  };

/** The same figures from rows in hand (the in-memory ledger's `rows()`). */
export const rowsLedgerStats =
  (rows: () => Promise<DeliveryRecord[]>, now: () => number): LedgerStatsSource =>
  async (tenant) => {
    const stats = new StatsAccumulator(now(), tenant);
    for (const row of await rows()) stats.add(row);
    return stats.result();
  };

const SEARCH_ATTRIBUTE: Record<Exclude<SearchField, 'dedupeKey'>, string> = {
  eventId: 'eventId',
  recipientRef: 'recipientRef',
  providerMessageId: 'providerMessageId',
};

/**
 * Finds rows by business event id, recipient ref or provider message id with a filtered, paginated Scan
 * (operator reads only: the console's role has Scan on the ledger, no hot path does); a dedupe key is the
 * partition key, read with one GetItem.
 */
export const dynamoNotificationSearch = (
  client: DynamoDBDocumentClient,
  tableName: string,
  ledger: Pick<Ledger, 'get'>,
): NotificationSearch => ({
  async find(field, value, limit) {
    if (field === 'dedupeKey') {
      const row = await ledger.get(value, true);
      return { rows: row ? [row] : [], truncated: false };
    }
    const rows: DeliveryRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await client.send(
        new ScanCommand({
          TableName: tableName,
          FilterExpression: '#f = :v AND attribute_exists(#s)',
          ExpressionAttributeNames: { '#f': SEARCH_ATTRIBUTE[field], '#s': 'state' },
          ExpressionAttributeValues: { ':v': value },
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      rows.push(...((out.Items ?? []) as DeliveryRecord[]));
      startKey = out.LastEvaluatedKey;
      if (rows.length > limit) return { rows: rows.slice(0, limit), truncated: true };
    } while (startKey);
    return { rows, truncated: false };
  },
});

/** The same search over rows in hand (the in-memory ledger). */
export const rowsNotificationSearch = (rows: () => Promise<DeliveryRecord[]>): NotificationSearch => ({
  async find(field, value, limit) {
    const found = (await rows()).filter((row) =>
      field === 'dedupeKey' ? row.pk === value : row[field] === value,
    );
    return { rows: found.slice(0, limit), truncated: found.length > limit };
  },
});

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
