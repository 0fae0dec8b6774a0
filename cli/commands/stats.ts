import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Command } from 'commander';
import { dynamoDocumentClient } from '../../lib/aws/clients.js';
import { ATTENTION_STATES } from '../../lib/domain/states.js';
import type { DeliveryRecord } from '../../lib/ledger/port.js';
import { output, requireTable, resolveTarget, type TargetOptions, withTargetOptions } from '../localState.js';

export interface LedgerStats {
  rows: number;
  byState: Record<string, number>;
  /** Oldest age, in seconds, of rows waiting in each attention state. */
  oldestWaitingSeconds: Record<string, number>;
}

/**
 * Counts rows by state with a paginated, projected scan (an operator command, never on a hot path;
 * progress goes to stderr). Attention ages come from `attnAt`, the time a row entered its state.
 */
export const ledgerStats = async (
  scan: (
    startKey?: Record<string, unknown>,
  ) => Promise<{ items: Partial<DeliveryRecord>[]; next?: Record<string, unknown> }>,
  now: number,
  onPage?: (rows: number) => void,
): Promise<LedgerStats> => {
  const stats: LedgerStats = { rows: 0, byState: {}, oldestWaitingSeconds: {} };
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await scan(startKey);
    for (const row of page.items) {
      if (!row.state) continue; // fallback-flow pointers have no state
      stats.rows += 1;
      stats.byState[row.state] = (stats.byState[row.state] ?? 0) + 1;
      if (row.attnAt !== undefined && ATTENTION_STATES.includes(row.state)) {
        const age = Math.max(0, Math.round((now - row.attnAt) / 1000));
        stats.oldestWaitingSeconds[row.state] = Math.max(stats.oldestWaitingSeconds[row.state] ?? 0, age);
      }
    }
    onPage?.(stats.rows);
    startKey = page.next;
  } while (startKey);
  return stats;
};

export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('stats')
      .description('ledger rows by state, and the age of the oldest row waiting in each attention state')
      .option('--json', 'machine-readable output'),
  ).action(async (options: TargetOptions & { json?: boolean }) => {
    const target = resolveTarget(options);
    const table = requireTable(target);
    const client = dynamoDocumentClient({
      region: target.region,
      ...(target.endpointDynamoDb ? { endpoint: target.endpointDynamoDb } : {}),
    });
    const stats = await ledgerStats(
      async (startKey) => {
        const out = await client.send(
          new ScanCommand({
            TableName: table,
            ProjectionExpression: '#s, attnAt',
            ExpressionAttributeNames: { '#s': 'state' },
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
        );
        return {
          items: (out.Items ?? []) as Partial<DeliveryRecord>[],
          ...(out.LastEvaluatedKey ? { next: out.LastEvaluatedKey } : {}),
        };
      },
      Date.now(),
      (rows) => process.stderr.write(`scanned ${rows} rows\r`),
    );
    output(options.json, stats, () =>
      [
        `${stats.rows} rows`,
        ...Object.entries(stats.byState)
          .sort()
          .map(([state, count]) => `  ${state.padEnd(18)} ${count}`),
        ...Object.entries(stats.oldestWaitingSeconds).map(([state, age]) => `oldest ${state}: ${age} s`),
      ].join('\n'),
    );
  });
};
