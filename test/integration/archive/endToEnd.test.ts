import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDbAudit } from '../../../lib/archive/DuckDbAudit.js';
import { startLocalArchive } from '../../../lib/archive/LocalArchive.js';
import type { LocalStreamPoller } from '../../../lib/archive/LocalStreamPoller.js';
import { loadNamedQueries } from '../../../lib/archive/namedQueries.js';
import { s3Client } from '../../../lib/aws/storageClients.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { waitFor } from '../../../lib/local/ports.js';
import { baseRow, dedupeKeyOf } from '../../fixtures/archive/streamRecords.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';
import { linesOf, readBucket, startLocalS3 } from './localS3.js';

const objectsUnder = async (dir: string): Promise<string[]> => {
  const root = join(dir, 'transitions');
  if (!existsSync(root)) return [];
  return (await readdir(root, { recursive: true })).map(String).filter((f) => f.endsWith('.jsonl.gz'));
};
const countLines = async (dir: string): Promise<number> => {
  let n = 0;
  for (const f of await objectsUnder(dir))
    n += gunzipSync(await readFile(join(dir, 'transitions', f)))
      .toString('utf8')
      .split('\n')
      .filter(Boolean).length;
  return n;
};

// Real servers end to end: DynamoDB Local (table with stream) ← DynamoLedger writes;
// LocalStreamPoller reads the stream → archiver → fauxqs S3 + mirror folder → DuckDB explain query.
describe('archive end to end on DynamoDB Local, fauxqs and DuckDB', () => {
  const bucket = 'sendproof-archive-e2e';
  let local: Awaited<ReturnType<typeof startLocalS3>>;
  let poller: LocalStreamPoller | undefined;
  let mirrorDir: string;

  beforeAll(async () => {
    local = await startLocalS3('unused-bootstrap-bucket');
    mirrorDir = await mkdtemp(join(tmpdir(), 'sendproof-archive-e2e-'));
  });

  afterAll(async () => {
    await poller?.stop();
    await local?.stop();
    await rm(mirrorDir, { recursive: true, force: true });
  });

  it('ledger transitions written by DynamoLedger reach S3 and the mirror once each, batched, and explain in order', async () => {
    // Prepare
    const { raw, doc, endpoint } = localDynamo();
    const table = await createLedgerTable(raw, 'archive-e2e');
    const ledger = new DynamoLedger(doc, table);
    poller = await startLocalArchive({
      region: 'us-east-1',
      dynamoEndpoint: endpoint,
      s3Endpoint: local.endpoint,
      ledgerTable: table,
      bucket,
      mirrorDir,
      logger: new Logger({ serviceName: 'sendproof-test', logLevel: 'SILENT' }),
      intervalMs: 100,
      // Long enough that all four writes below land in one batch (they take well under a second).
      maxBatchingWindowMs: 3_000,
    });
    const n = { eventId: 'evt-e2e-1', recipientRef: 'user-e2e', channel: 'email' as const };
    const pk = dedupeKeyOf(n);
    const t0 = Date.parse('2026-11-30T10:00:00Z');

    // Act
    const claimed = await ledger.claim(baseRow(n, { s: 'claimed', at: t0, by: 'dispatch:e2e' }));
    await ledger.openFlow(`flow#${pk}`, ['email', 'sms']);
    const steps = [
      { from: 'claimed', to: 'dispatching', by: 'dispatch:e2e', set: { transport: 'ses', attempts: 1 } },
      { from: 'dispatching', to: 'unknown', by: 'dispatch:e2e', why: 'provider_timeout_after_send' },
      {
        from: 'unknown',
        to: 'accepted',
        by: 'evidence:ses-events',
        why: 'delivery_event',
        set: { providerMessageId: 'ses-e2e-0001' },
        evidenceId: 'ses-event-1',
      },
    ] as const;
    let version = 1;
    for (const [i, step] of steps.entries()) {
      const result = await ledger.transition({
        pk,
        expectedVersion: version,
        now: t0 + (i + 1) * 1000,
        ...step,
      });
      expect(result.kind).toBe('ok');
      version += 1;
    }
    await waitFor(async () => (await countLines(mirrorDir)) >= 4, 20_000, 'four archived transitions');
    // More rounds after the last object: nothing may be written twice by a later poll.
    await poller.pollOnce();
    await poller.flush();

    // Assess
    expect(claimed.kind).toBe('claimed');
    expect(await countLines(mirrorDir)).toBe(4);
    // One batch, one partition: one object for four transitions (the per-record layout wrote four).
    expect(await objectsUnder(mirrorDir)).toHaveLength(1);
    const lines = linesOf(await readBucket(local.s3, bucket));
    expect(lines.map((l) => l.version).sort()).toEqual([1, 2, 3, 4]);
    const audit = await DuckDbAudit.open(mirrorDir);
    try {
      const explain = loadNamedQueries().find((q) => q.name === 'explain-notification')!;
      const { rows } = await audit.runNamed(explain, ['default', '2026-11-30', '2026-11-30', 'evt-e2e-1']);
      expect(rows.map((r) => [r.version, r.from_state, r.to_state, r.actor, r.transport_message_id])).toEqual(
        [
          [1, null, 'claimed', 'dispatch:e2e', null],
          [2, 'claimed', 'dispatching', 'dispatch:e2e', null],
          [3, 'dispatching', 'unknown', 'dispatch:e2e', null],
          [4, 'unknown', 'accepted', 'evidence:ses-events', 'ses-e2e-0001'],
        ],
      );
      expect(rows[3]).toMatchObject({ transport: 'ses', transition_at: '2026-11-30T10:00:03.000Z' });
    } finally {
      audit.close();
    }
  });

  it('with puts failing at random (seeded) and small batches, archive = ledger, each transition counted once', async () => {
    // Prepare: 30 % of archive PUTs fail; the poller retries from the first failed record, so batches
    // are regrouped and some transitions are stored twice under different batch keys.
    const { raw, doc, endpoint } = localDynamo();
    const table = await createLedgerTable(raw, 'archive-chaos');
    const ledger = new DynamoLedger(doc, table);
    const chaosDir = await mkdtemp(join(tmpdir(), 'sendproof-archive-chaos-'));
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    let failedPuts = 0;
    const s3 = s3Client({ region: 'us-east-1', endpoint: local.endpoint });
    s3.middlewareStack.add(
      (next) => async (args) => {
        if ((args.input as { Body?: unknown }).Body !== undefined && random() < 0.3) {
          failedPuts += 1;
          throw Object.assign(new Error('injected archive failure'), { name: 'InternalError' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'chaos' },
    );
    await poller?.stop();
    poller = await startLocalArchive({
      region: 'us-east-1',
      dynamoEndpoint: endpoint,
      s3Endpoint: local.endpoint,
      s3,
      ledgerTable: table,
      bucket,
      mirrorDir: chaosDir,
      logger: new Logger({ serviceName: 'sendproof-test', logLevel: 'SILENT' }),
      intervalMs: 50,
      batchSize: 7,
      maxBatchingWindowMs: 100,
    });
    const t0 = Date.parse('2026-11-30T12:00:00Z');

    // Act: 20 notifications across two tenants, three transitions each.
    for (let i = 0; i < 20; i++) {
      const n = {
        tenant: i % 2 ? 'acme' : 'default',
        eventId: `evt-chaos-${i}`,
        recipientRef: 'user-c',
        channel: 'email' as const,
      };
      const pk = dedupeKeyOf(n);
      const at = t0 + i * 10;
      await ledger.claim(baseRow(n, { s: 'claimed', at, by: 'dispatch:c' }));
      await ledger.transition({
        pk,
        expectedVersion: 1,
        now: at + 1,
        from: 'claimed',
        to: 'dispatching',
        by: 'dispatch:c',
      });
      await ledger.transition({
        pk,
        expectedVersion: 2,
        now: at + 2,
        from: 'dispatching',
        to: 'accepted',
        by: 'dispatch:c',
      });
    }
    const unique = async () => {
      const a = await DuckDbAudit.open(chaosDir);
      try {
        const { rows } = await a.query(
          "SELECT count(*) AS n, count(DISTINCT dedupe_key || '#' || CAST(version AS VARCHAR) || '#' || CAST(transition_at_ms AS VARCHAR)) AS d FROM transitions",
        );
        return rows[0] as { n: number; d: number };
      } catch {
        return { n: 0, d: 0 };
      } finally {
        a.close();
      }
    };
    await waitFor(async () => (await unique()).d >= 60, 40_000, 'sixty archived transitions');
    await poller.pollOnce();
    await poller.flush();

    // Assess
    const counts = await unique();
    expect(failedPuts).toBeGreaterThan(0);
    expect(counts.d).toBe(60);
    expect(counts.n).toBeGreaterThanOrEqual(60);
    const audit = await DuckDbAudit.open(chaosDir);
    try {
      const outcomes = loadNamedQueries().find((q) => q.name === 'channel-outcomes-daily')!;
      for (const tenant of ['default', 'acme']) {
        const { rows } = await audit.runNamed(outcomes, [tenant, '2026-11-30', '2026-11-30']);
        expect(rows).toEqual([
          { day: '2026-11-30', channel: 'email', outcome: 'accepted', notifications: 10 },
        ]);
      }
    } finally {
      audit.close();
      await rm(chaosDir, { recursive: true, force: true });
    }
  }, 90_000);
});
