import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Command } from 'commander';
import { dynamoDocumentClient } from '../../lib/aws/clients.js';
import { NON_TERMINAL_STATES } from '../../lib/domain/states.js';
import type { DeliveryRecord } from '../../lib/ledger/port.js';
import { output, requireTable, resolveTarget, type TargetOptions, withTargetOptions } from '../localState.js';

export interface LedgerStats {
  rows: number;
  byState: Record<string, number>;
  /** Oldest age, in seconds, of the rows in each non-terminal state (since the row was created). */
  oldestWaitingSeconds: Record<string, number>;
  /** Notifications whose intent the ledger holds sealed (parked work the sweep owns). */
  sealed: number;
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
  const stats: LedgerStats = { rows: 0, byState: {}, oldestWaitingSeconds: {}, sealed: 0 };
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await scan(startKey);
    for (const row of page.items) {
      if ((row as { kind?: string }).kind === 'seal') stats.sealed += 1;
      if (!row.state) continue; // fallback-flow pointers and seals have no state
      stats.rows += 1;
      stats.byState[row.state] = (stats.byState[row.state] ?? 0) + 1;
      const since = row.createdAt ?? row.attnAt;
      if (since !== undefined && NON_TERMINAL_STATES.includes(row.state)) {
        const age = Math.max(0, Math.round((now - since) / 1000));
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
      .description(
        'ledger rows by state, the age of the oldest row in each non-terminal state, and sealed notifications',
      )
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
            ProjectionExpression: '#s, attnAt, createdAt, #k',
            ExpressionAttributeNames: { '#s': 'state', '#k': 'kind' },
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
        `sealed (parked, owned by the sweep): ${stats.sealed}`,
      ].join('\n'),
    );
  });
};
