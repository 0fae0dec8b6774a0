import { Worker } from 'node:worker_threads';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';

interface RaceReport {
  workerId: string;
  won: string[];
  conflicts: Array<{ key: string; shownOwner: string }>;
}

describe('claim race on DynamoDB Local', () => {
  it('16 concurrent workers racing 200 keys produce exactly 200 claims and 3,000 conflicts that each return the winner', async () => {
    // Prepare
    const { raw, doc, endpoint } = localDynamo();
    const table = await createLedgerTable(raw, 'race');
    const keys = Array.from({ length: 200 }, (_, i) => `t:receipt:order-${i}:r:email`);
    // Act: 16 worker threads, each with its own client, started together
    const reports = await Promise.all(
      Array.from(
        { length: 16 },
        (_, w) =>
          new Promise<RaceReport>((resolve, reject) => {
            const worker = new Worker(new URL('../../support/claimRaceWorker.mjs', import.meta.url), {
              workerData: { endpoint, table, workerId: `worker-${w}`, keys, seed: w + 1 },
            });
            worker.once('message', resolve);
            worker.once('error', reject);
          }),
      ),
    );
    // Assess
    const winnerOf = new Map<string, string>();
    for (const report of reports) {
      for (const key of report.won) {
        expect(winnerOf.has(key), `${key} claimed twice`).toBe(false);
        winnerOf.set(key, report.workerId);
      }
    }
    const conflicts = reports.flatMap((r) => r.conflicts);
    expect(winnerOf.size).toBe(200);
    expect(conflicts).toHaveLength(3000);
    for (const c of conflicts) expect(c.shownOwner).toBe(winnerOf.get(c.key));
    // More than one worker must have won something, or the race was not a race.
    expect(new Set(winnerOf.values()).size).toBeGreaterThan(1);
    // Delivery rows only, and no evidence pointers: every key fits a row label (lib/domain/keys.ts).
    const stored = await doc.send(
      new ScanCommand({
        TableName: table,
        Select: 'COUNT',
        FilterExpression: 'attribute_exists(#s)',
        ExpressionAttributeNames: { '#s': 'state' },
      }),
    );
    expect(stored.Count).toBe(200);
    const pointers = await doc.send(
      new ScanCommand({
        TableName: table,
        Select: 'COUNT',
        FilterExpression: 'attribute_exists(#r)',
        ExpressionAttributeNames: { '#r': 'ref' },
      }),
    );
    expect(pointers.Count).toBe(0);
  }, 240_000); // 3,200 conditional writes from 16 threads: generous, because CI has two shared cores
});
