import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { s3Client } from '../../lib/aws/storageClients.js';
import { startFauxqs } from '../../lib/local/queues.js';
import { createLedgerTable, localDynamo } from '../support/dynamo.js';
import { MARKERS } from '../support/fixtures.js';
import { scanForSecrets } from './secretScan.js';
import { LAST_RECEIVE_EDGES, PDF_MARKER, planSoak, SOAK_FAULT_KINDS } from './soakPlan.js';
import { runSoak } from './soakRun.js';

/**
 * The fault-load run, small: the same code as `npm run soak`, with 300 intents and a 10 % fault mix so
 * every fault kind occurs. Real servers: the whole local stack (DynamoDB Local, fauxqs, the provider
 * simulator for both channels, the functions worker) plus one more dispatcher process.
 */
/** Beyond the dispatcher's 10 s inline budget, so parked; `npm run soak` uses 45 s (> 5 × the 8 s visibility). */
const LONG_RETRY_AFTER_S = 12;

describe('fault-load run (small, in the suite)', () => {
  it('300 intents under faults, duplicates, last-receive crashes, long Retry-After and two dispatcher processes: none lost, none stranded, no key accepted twice, archive = ledger, no secret anywhere', async () => {
    // Prepare
    const lines: string[] = [];
    // Act
    const report = await runSoak({
      intents: 300,
      faultRate: 0.1,
      duplicateRate: 0.05,
      seed: 7,
      extraWorkers: 1,
      lastReceiveRate: 0.02,
      longRetryRate: 0.02,
      longRetryAfterSeconds: LONG_RETRY_AFTER_S,
      // The issue 26 edges: 3 template-gone receipts, 3 resets whose bounce is read before their
      // `accepted` write, and a storm of 3 SMS × 8 publishes.
      templateGoneRate: 0.01,
      earlyBounceRate: 0.01,
      stormRate: 0.01,
      stormCopies: 8,
      timeoutSeconds: 100,
      progress: (line) => lines.push(line),
    });
    // Assess
    const f = report.figures;
    expect(report.violations, report.violations.join('\n')).toEqual([]);
    expect(f.intents).toBe(300 + 3 + 3 + 3);
    // Every intent once, the duplicates, the storm's extra copies; not the last receives nor the
    // template-gone receipts (claimed by the run itself).
    expect(f.published).toBe(
      f.intents + f.duplicatePublishes + 3 * (8 - 1) - f.lastReceive.planned - f.templateGone.planned,
    );
    expect(f.duplicatePublishes).toBeGreaterThan(0);
    for (const kind of SOAK_FAULT_KINDS) expect(f.faultsInjected[kind], kind).toBeGreaterThan(0);
    expect(f.faultsInjected).toEqual(f.faultsPlanned);
    expect(f.duplicatesFound).toBe(0);
    expect(f.lost).toBe(0);
    expect(f.stranded).toBe(0);
    expect(f.stalled).toBe(0);
    // Last-receive crashes at every edge, each killed mid-dispatch and finished by the sweep alone.
    expect(f.lastReceive.planned).toBe(6);
    expect(f.lastReceive).toMatchObject({ killed: 6, recovered: 6 });
    for (const edge of LAST_RECEIVE_EDGES) expect(f.lastReceive.byEdge[edge], edge).toBe(2);
    expect(f.deadLetters).toBe(f.lastReceive.killed);
    for (const x of report.faulted.filter((y) => y.fault === 'last_receive:after_dispatching'))
      expect(x.path).toBe('dispatching → unknown → dispatching → accepted');
    // Long Retry-After faults: parked (not slept inline), sent once after the Retry-After.
    expect(f.longRetryAfter).toEqual({ seconds: LONG_RETRY_AFTER_S, planned: 6, honoured: 6 });
    for (const x of report.faulted.filter((y) => y.fault === 'status_429_long'))
      expect(x.path).toBe('dispatching → retry_wait → dispatching → accepted');
    expect(f.secretsFound).toBe(0);
    expect(f.archiveTransitions).toBe(f.ledgerTransitions);
    expect(f.providerAcceptances).toBeGreaterThanOrEqual(
      f.intents - f.faultsInjected.reject - f.templateGone.planned,
    );
    // The edges: an unrenderable scheduled receipt ends blocked/stalled with its reason; a duplicate
    // storm does not open the breaker.
    expect(f.templateGone.planned).toBe(3);
    expect(f.templateGone.blocked + f.templateGone.stalled).toBe(3);
    expect(Object.keys(f.templateGone.reasons).every((why) => why.length > 0)).toBe(true);
    // A bounce read from the provider's feed before the `accepted` write is kept and applied by it: the
    // row ends bounced and the recipient suppressed (check 10 also reports any that is not a violation).
    // The edge really happened: the simulator held the answer until the feed was read past the bounce
    // (up to 7 s; all 3 on a quiet machine), so the bounce was recorded before the `accepted` entry.
    expect(f.earlyBounce).toMatchObject({ planned: 3, bounced: 3, suppressed: 3 });
    expect(f.earlyBounce.recordedBeforeAccepted).toBeGreaterThan(0);
    expect(f.storm).toEqual({
      messages: 3,
      copies: 8,
      accepted: 3,
      breakerSends: 3,
      breakerState: 'closed',
      blockedByBreaker: 0,
    });
    // The scan really read every place: items, log lines, metric lines, archived objects.
    expect(f.secretScan.dynamoItems).toBeGreaterThanOrEqual(f.channelsExpected);
    expect(f.secretScan.logLines).toBeGreaterThan(0);
    expect(f.secretScan.metricLines).toBeGreaterThan(0);
    expect(f.secretScan.s3Objects).toBeGreaterThan(0);
    expect(f.secretScan.archiveFiles).toBeGreaterThan(0);
    expect(f.secretScan.bundleFiles).toBeGreaterThan(4);
    // Lost answers were recovered through the ledger (unknown → replay or lookup), never by a blind resend.
    const dropped = report.faulted.filter((x) => x.fault === 'accept_then_drop');
    for (const x of dropped) expect(x.path).toMatch(/dispatching → unknown → .*accepted$/);
    expect(lines.some((l) => l.startsWith('published'))).toBe(true);
  }, 180_000);
});

describe('soak plan', () => {
  it('is deterministic for a seed: the same intents, duplicates and faults pinned to the same keys', () => {
    // Prepare
    const dir = mkdtempSync(join(tmpdir(), 'sendproof-plan-'));
    const options = {
      intents: 400,
      faultRate: 0.05,
      duplicateRate: 0.02,
      seed: 11,
      lastReceiveRate: 0.02,
      longRetryRate: 0.01,
      longRetryAfterSeconds: 45,
      workDir: dir,
      now: 1_796_000_000_000,
    };
    // Act
    const a = planSoak(options);
    const b = planSoak(options);
    const c = planSoak({ ...options, seed: 12 });
    // Assess
    expect(b.faults.map((f) => f.spec)).toEqual(a.faults.map((f) => f.spec));
    expect(b.publishOrder).toEqual(a.publishOrder);
    expect(c.faults.map((f) => f.spec)).not.toEqual(a.faults.map((f) => f.spec));
    expect(new Set(a.intents.map((p) => p.kind))).toEqual(
      new Set(['reset_email', 'receipt', 'health_report_fallback', 'reset_both_channels']),
    );
    expect(b.lastReceive).toEqual(a.lastReceive);
    expect(c.lastReceive).not.toEqual(a.lastReceive);
    // Last-receive intents are never published (their message dies with the killed dispatcher)…
    expect(a.lastReceive).toHaveLength(8);
    const unpublished = new Set(a.lastReceive.map((l) => l.index));
    expect(a.publishOrder.filter((i) => unpublished.has(i))).toEqual([]);
    expect(a.publishOrder).toHaveLength(400 + a.duplicates - 8);
    // …and a long 429 never shares an intent with another fault or a last-receive crash.
    const long = a.faults.filter((f) => f.kind === 'status_429_long');
    expect(long).toHaveLength(4);
    for (const f of long) expect(f.spec).toMatchObject({ fault: 'status_429', retryAfterSeconds: 45 });
    const faultedIntents = a.faults.map((f) => f.index);
    expect(new Set(faultedIntents).size).toBe(faultedIntents.length);
    for (const i of faultedIntents) expect(unpublished.has(i)).toBe(false);
    for (const f of a.faults)
      expect(f.spec.match?.idempotencyKey).toBe(a.intents[f.index]!.keys[f.channel]!.hash);
  });
});

describe('secret scan (DynamoDB Local, fauxqs S3, files)', () => {
  it('finds a marker planted in a DynamoDB item, a log line, a metric line, an S3 object and an archive file', async () => {
    // Prepare
    const { raw, doc, endpoint } = localDynamo();
    const table = await createLedgerTable(raw, 'scan');
    await doc.send(new PutCommand({ TableName: table, Item: { pk: 'planted', note: `x${MARKERS.token}x` } }));
    const fauxqs = await startFauxqs();
    const s3 = fauxqs.endpoint;
    const client = s3Client({ region: 'us-east-1', endpoint: s3 });
    await client.send(new CreateBucketCommand({ Bucket: 'scan-archive' }));
    await client.send(
      new PutObjectCommand({
        Bucket: 'scan-archive',
        Key: 'transitions/dt=2026-11-30/1.jsonl.gz',
        Body: gzipSync(`{"reason":"${MARKERS.phone}"}\n`),
      }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'sendproof-scan-'));
    const archiveDir = join(dir, 'archive');
    mkdirSync(join(archiveDir, 'transitions', 'dt=2026-11-30'), { recursive: true });
    writeFileSync(
      join(archiveDir, 'transitions', 'dt=2026-11-30', '1.jsonl.gz'),
      gzipSync(`{"x":"${PDF_MARKER}"}\n`),
    );
    const functionsLog = join(dir, 'functions.log');
    writeFileSync(
      functionsLog,
      `{"level":"INFO","message":"ok"}\n{"level":"WARN","to":"${MARKERS.email}"}\n{"_aws":{"Timestamp":1},"tag":"${MARKERS.email}"}\n`,
    );
    try {
      // Act
      const result = await scanForSecrets(
        { dynamodb: endpoint, region: 'us-east-1', functionsLog, archiveDir, s3, bucket: 'scan-archive' },
        [MARKERS.token, MARKERS.email, MARKERS.phone, PDF_MARKER],
      );
      // Assess
      expect(result.hits).toEqual(
        expect.arrayContaining([
          { where: `dynamodb:${table}`, marker: MARKERS.token },
          { where: 'log', marker: MARKERS.email },
          { where: 'metric', marker: MARKERS.email },
          { where: 's3:transitions/dt=2026-11-30/1.jsonl.gz', marker: MARKERS.phone },
          { where: 'archive:transitions/dt=2026-11-30/1.jsonl.gz', marker: PDF_MARKER },
        ]),
      );
      expect(result.scanned.logLines).toBe(2);
      expect(result.scanned.metricLines).toBe(1);
    } finally {
      await fauxqs.stop();
    }
  });
});
