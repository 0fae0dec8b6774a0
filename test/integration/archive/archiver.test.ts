import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArchiver } from '../../../lib/archive/archiver.js';
import { ARCHIVE_COLUMNS, ARCHIVE_SCHEMA_VERSION } from '../../../lib/archive/schema.js';
import type { TransitionEntry } from '../../../lib/ledger/port.js';
import {
  at,
  dedupeKeyOf,
  eventOf,
  notificationRecords,
  removeRecord,
  type Step,
  streamRecord,
} from '../../fixtures/archive/streamRecords.js';
import { linesOf, readBucket, startLocalS3 } from './localS3.js';

// Real S3 API: fauxqs in process on 127.0.0.1; real gzip files in a temporary mirror folder.
const logger = new Logger({ serviceName: 'sendproof-test', logLevel: 'SILENT' });
const notification = { eventId: 'evt-1001', recipientRef: 'user-42', channel: 'email' as const };
const t0 = at('2026-11-30T10:00:00Z');

const happyPathWithUnknown = (inject?: Record<string, unknown>): DynamoDBRecord[] =>
  notificationRecords(notification, [
    { s: 'claimed', at: t0, by: 'dispatch:w1', ...(inject ? { inject } : {}) },
    { s: 'dispatching', at: t0 + 150, by: 'dispatch:w1', n: 1, set: { transport: 'ses', attempts: 1 } },
    { s: 'unknown', at: t0 + 5_150, by: 'dispatch:w1', why: 'provider_timeout_after_send', n: 1 },
    {
      s: 'accepted',
      at: t0 + 65_000,
      by: 'evidence:ses-events',
      why: 'delivery_event',
      msg: 'ses-0101-abc',
      set: { providerMessageId: 'ses-0101-abc' },
      ...(inject ? { inject } : {}),
    },
  ]);

const filesUnder = async (dir: string): Promise<Map<string, Buffer>> => {
  const files = new Map<string, Buffer>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name);
      files.set(relative(dir, path), await readFile(path));
    }
  }
  return files;
};

describe('archiver on a local S3 (fauxqs) and a mirror folder', () => {
  let local: Awaited<ReturnType<typeof startLocalS3>>;
  const scratch: string[] = [];
  let buckets = 0;

  const freshArchive = async () => {
    const bucket = `archive-${++buckets}`;
    await local.s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const mirrorDir = await mkdtemp(join(tmpdir(), 'sendproof-archive-mirror-'));
    scratch.push(mirrorDir);
    const archive = createArchiver({ s3: local.s3, bucket, mirrorDir, logger });
    return { bucket, mirrorDir, archive, read: () => readBucket(local.s3, bucket) };
  };

  beforeAll(async () => {
    local = await startLocalS3('archive-0');
  });

  afterAll(async () => {
    await local?.stop();
    await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('archives a batch as one object; a whole retry rewrites the same key, a bisected retry adds copies the dedupe identity collapses', async () => {
    // Prepare
    const { archive, read } = await freshArchive();
    const records = happyPathWithUnknown();

    // Act: the first delivery, a full retry of the same batch, then a bisected retry (two halves).
    const first = await archive(eventOf(records));
    const retried = await archive(eventOf(records));
    const left = await archive(eventOf(records.slice(0, 2)));
    const right = await archive(eventOf(records.slice(2)));

    // Assess
    for (const response of [first, retried, left, right]) expect(response.batchItemFailures).toEqual([]);
    const objects = await read();
    const seq = records.map((r) => r.dynamodb!.SequenceNumber!.padStart(40, '0'));
    const prefix = 'transitions/tenant=default/dt=2026-11-30/';
    expect([...objects.keys()].sort()).toEqual(
      [`${seq[0]}-${seq[3]}`, `${seq[0]}-${seq[1]}`, `${seq[2]}-${seq[3]}`]
        .map((k) => `${prefix}${k}.jsonl.gz`)
        .sort(),
    );
    const all = linesOf(objects);
    expect(all).toHaveLength(8);
    const unique = new Map(all.map((l) => [`${l.dedupe_key}#${l.version}#${l.transition_at_ms}`, l]));
    const lines = [...unique.values()].sort((a, b) => Number(a.version) - Number(b.version));
    expect(lines.map((l) => [l.version, l.from_state, l.to_state, l.transport_message_id])).toEqual([
      [1, null, 'claimed', null],
      [2, 'claimed', 'dispatching', null],
      [3, 'dispatching', 'unknown', null],
      [4, 'unknown', 'accepted', 'ses-0101-abc'],
    ]);
    expect(lines[3]).toMatchObject({
      dedupe_key: dedupeKeyOf(notification),
      event_id: 'evt-1001',
      actor: 'evidence:ses-events',
      reason: 'delivery_event',
      transport: 'ses',
      transition_at: '2026-11-30T10:01:05.000Z',
      transition_at_ms: t0 + 65_000,
      stream_sequence_number: records[3]!.dynamodb!.SequenceNumber,
    });
    expect(Object.keys(lines[0]!)).toEqual(ARCHIVE_COLUMNS.map((c) => c.name));
    expect(lines[0]).toMatchObject({ schema_version: ARCHIVE_SCHEMA_VERSION });
  });

  it('writes gzip objects to S3 and the same keys and bytes to the mirror folder', async () => {
    // Prepare
    const { archive, read, mirrorDir } = await freshArchive();

    // Act
    await archive(eventOf(happyPathWithUnknown()));

    // Assess
    const inS3 = await read();
    const mirrored = await filesUnder(mirrorDir);
    expect([...mirrored.keys()].sort()).toEqual([...inS3.keys()].sort());
    for (const [key, bytes] of mirrored) expect(gunzipSync(bytes).toString('utf8')).toBe(inS3.get(key));
  });

  it('leaves no trace of a reset token or an address injected into the stream images', async () => {
    // Prepare: unexpected attributes at the top level, inside a history entry, and a known field
    // replaced by a map that holds the secret.
    const token = 'rst-7Qx9-SECRET-TOKEN-31337';
    const inject = {
      secrets: { resetToken: token },
      recipient: { email: 'alice@example.com', phone: '+15555550123' },
      renderedBody: `Reset your password: https://app.example/reset?t=${token}`,
      transport: { token },
    };
    const records = happyPathWithUnknown(inject);
    const poisoned = records[1]!.dynamodb!.NewImage!.history!.L!;
    poisoned[0]!.M!.otp = { S: token };
    const { archive, read, mirrorDir } = await freshArchive();

    expect(JSON.stringify(records)).toContain(token);

    // Act
    const response = await archive(eventOf(records));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const objects = await read();
    expect(objects.size).toBe(1);
    const everything = [
      ...objects.values(),
      ...[...(await filesUnder(mirrorDir)).values()].map((b) => gunzipSync(b).toString('utf8')),
    ].join('\n');
    expect(everything).toContain('evt-1001');
    for (const secret of [token, 'alice@example.com', '+15555550123', 'reset?t=', 'otp', 'renderedBody'])
      expect(everything).not.toContain(secret);
  });

  it('sends one put per batch with Content-Encoding gzip, a SHA-256 checksum and the COMPLIANCE retain-until of its purposes', async () => {
    // Prepare: a client of its own, observing the headers that actually leave for fauxqs.
    const { bucket } = await freshArchive();
    const s3 = new S3Client({
      region: 'us-east-1',
      endpoint: local.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const sent: Array<Record<string, string>> = [];
    s3.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { method?: string; headers?: Record<string, string> };
        if (request.method === 'PUT') sent.push({ ...request.headers });
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low', name: 'observePuts' },
    );
    // fauxqs has no Object Lock: it accepts the headers and ignores them. What is asserted is the request
    // the SDK actually sends, which AWS S3 would enforce.
    const days: Record<string, number> = { 'password-reset': 365, receipt: 2555 };
    const archive = createArchiver({
      s3,
      bucket,
      logger,
      retentionDaysOf: (purpose) => days[purpose ?? ''] ?? 30,
      now: () => t0,
    });
    const receipt = notificationRecords({ ...notification, eventId: 'evt-r', purpose: 'receipt' }, [
      { s: 'claimed', at: t0 + 1_000, by: 'dispatch:w1' },
    ]);

    // Act
    await archive(eventOf([...happyPathWithUnknown(), ...receipt]));

    // Assess: four resets and one receipt on one tenant and day: one object, kept as long as the receipt.
    expect(sent).toHaveLength(1);
    for (const headers of sent) {
      expect(headers['content-encoding']).toBe('gzip');
      expect(headers['x-amz-checksum-sha256']).toMatch(/^[A-Za-z0-9+/]{43}=$/);
      expect(headers['x-amz-object-lock-mode']).toBe('COMPLIANCE');
      expect(headers['x-amz-object-lock-retain-until-date']).toBe(
        new Date(t0 + 1_000 + 2555 * 86_400_000).toISOString().replace('.000Z', 'Z'),
      );
      expect(headers['x-amz-meta-sendproof-records']).toBe('5');
    }
  });

  it('splits one batch into one object per tenant and transition day', async () => {
    // Prepare
    const { archive, read } = await freshArchive();
    const acme = { ...notification, tenant: 'acme' };
    const late = at('2026-11-30T23:59:59.000Z');
    const records = [
      ...happyPathWithUnknown(),
      ...notificationRecords(acme, [
        { s: 'claimed', at: late, by: 'dispatch:w2' },
        { s: 'dispatching', at: late + 2_000, by: 'dispatch:w2' },
      ]),
    ];

    // Act
    const response = await archive(eventOf(records));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const objects = await read();
    expect([...objects.keys()].map((k) => k.split('/').slice(1, 3).join('/')).sort()).toEqual([
      'tenant=acme/dt=2026-11-30',
      'tenant=acme/dt=2026-12-01',
      'tenant=default/dt=2026-11-30',
    ]);
    expect(linesOf(objects)).toHaveLength(6);
    expect(linesOf(objects).every((l) => !('tenant' in l))).toBe(true);
  });

  it('a put refused for one partition reports that partition’s first record; the other partition is written', async () => {
    // Prepare: a client whose puts under tenant=acme fail (S3 refusing writes to that prefix).
    const { bucket } = await freshArchive();
    const s3 = new S3Client({
      region: 'us-east-1',
      endpoint: local.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    s3.middlewareStack.add(
      (next) => async (args) => {
        if (String((args.input as { Key?: string }).Key).includes('tenant=acme/'))
          throw Object.assign(new Error('refused'), { name: 'ServiceUnavailable' });
        return next(args);
      },
      { step: 'initialize', name: 'refuseAcme' },
    );
    const archive = createArchiver({ s3, bucket, logger });
    const resets = happyPathWithUnknown();
    const acme = notificationRecords({ ...notification, tenant: 'acme' }, [
      { s: 'claimed', at: t0, by: 'dispatch:w2' },
    ]);

    // Act
    const response = await archive(eventOf([resets[0]!, resets[1]!, acme[0]!, resets[2]!, resets[3]!]));

    // Assess: the event source will retry from the acme record; everything before it is safe.
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: acme[0]!.dynamodb!.SequenceNumber }]);
    expect(linesOf(await readBucket(local.s3, bucket)).map((l) => l.version)).toEqual([1, 2, 3, 4]);
  });

  it('skips REMOVE events: TTL deletions by the DynamoDB service and ordinary deletes alike', async () => {
    // Prepare
    const { archive, read } = await freshArchive();
    const rows = happyPathWithUnknown();
    const ttlDeletion = removeRecord(rows, true);
    const ordinaryDelete = removeRecord(rows, false);

    // Act
    const response = await archive(eventOf([ttlDeletion, ordinaryDelete]));

    // Assess
    expect(ttlDeletion.userIdentity).toEqual({ type: 'Service', principalId: 'dynamodb.amazonaws.com' });
    expect(response.batchItemFailures).toEqual([]);
    expect((await read()).size).toBe(0);
  });

  it('partitions by the transition time, not by the stream arrival time', async () => {
    // Prepare: the transition happens just before midnight; the stream record arrives after it.
    const { archive, read } = await freshArchive();
    const entry: TransitionEntry = { s: 'claimed', at: at('2026-11-30T23:59:59.900Z'), by: 'dispatch:w1' };
    const [insert] = notificationRecords(notification, [entry]);
    insert!.dynamodb!.ApproximateCreationDateTime = at('2026-12-01T00:00:02Z') / 1000;

    // Act
    await archive(eventOf([insert!]));

    // Assess
    const keys = [...(await read()).keys()];
    const sequence = insert!.dynamodb!.SequenceNumber!.padStart(40, '0');
    expect(keys).toEqual([`transitions/tenant=default/dt=2026-11-30/${sequence}-${sequence}.jsonl.gz`]);
    expect(linesOf(await read())[0]).toMatchObject({ stream_arrival_at_ms: at('2026-12-01T00:00:02Z') });
  });

  it('ignores fallback-flow pointers and updates that add no version', async () => {
    // Prepare
    const { archive, read } = await freshArchive();
    const [insert] = notificationRecords(notification, [{ s: 'claimed', at: t0, by: 'dispatch:w1' }]);
    const claimed = insert!.dynamodb!.NewImage!;
    const leaseRenewal = streamRecord({ eventName: 'MODIFY', sequenceNumber: '999000' });
    leaseRenewal.dynamodb!.OldImage = claimed;
    leaseRenewal.dynamodb!.NewImage = { ...claimed, leaseUntil: { N: String(t0 + 90_000) } };
    const pointer = streamRecord({
      eventName: 'INSERT',
      newImage: { pk: 'flow#default:password-reset:evt-1001:user-42', order: ['email', 'sms'], version: 1 },
    });

    // Act
    const response = await archive(eventOf([leaseRenewal, pointer]));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect((await read()).size).toBe(0);
  });

  it('reports a record whose write fails by its sequence number and still archives the rest', async () => {
    // Prepare: a row whose history disagrees with its version cannot be archived truthfully.
    const { archive, read } = await freshArchive();
    const steps: Step[] = [
      { s: 'claimed', at: t0, by: 'dispatch:w1' },
      { s: 'dispatching', at: t0 + 100, by: 'dispatch:w1' },
    ];
    const [good, broken] = notificationRecords(notification, steps);
    broken!.dynamodb!.NewImage!.version = { N: '7' };

    // Act
    const response = await archive(eventOf([good!, broken!]));

    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: broken!.dynamodb!.SequenceNumber }]);
    expect(linesOf(await read()).map((l) => l.to_state)).toEqual(['claimed']);
  });

  it('reports an S3 failure as a batch item failure so the event source retries it, and logs why', async () => {
    // Prepare: the bucket does not exist, so every put is refused; a logger that records errors.
    const errors: Array<{ message: string; extra: Record<string, unknown> }> = [];
    const recording = {
      debug: () => undefined,
      info: () => undefined,
      warn: () => undefined,
      error: (message: string, extra: Record<string, unknown>) => errors.push({ message, extra }),
    } as never;
    const archive = createArchiver({ s3: local.s3, bucket: 'no-such-archive-bucket', logger: recording });
    const rows = happyPathWithUnknown();

    // Act
    const response = await archive(eventOf([removeRecord(rows, true), removeRecord(rows, false), rows[0]!]));

    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: rows[0]!.dynamodb!.SequenceNumber }]);
    expect(errors.map((e) => e.message)).toEqual([
      'ledger row deleted outside TTL',
      'archive object not written',
    ]);
    expect(errors[1]?.extra).toMatchObject({
      sequenceNumber: rows[0]!.dynamodb!.SequenceNumber,
      error: expect.any(String),
    });
  });
});
