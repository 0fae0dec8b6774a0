import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KMSClient } from '@aws-sdk/client-kms';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unpackBundleDocument, verifyBundle } from '../../../lib/archive/bundle.js';
import { createDigests, localSigner } from '../../../lib/archive/digest.js';
import { S3Store } from '../../../lib/archive/store.js';
import { s3Client } from '../../../lib/aws/storageClients.js';
import { s3BundleExporter, spkiDerToPem } from '../../../lib/console/awsExport.js';
import { MemoryLedger } from '../../../lib/ledger/MemoryLedger.js';
import { freePort } from '../../../lib/local/ports.js';
import { type RunningFauxqs, startFauxqs } from '../../../lib/local/queues.js';
import { archiveRows } from '../../support/consoleArchive.js';
import { seedRow } from '../../support/consoleSeed.js';
import { ManualClock } from '../../support/manualClock.js';

// The export bundle as the console's Lambda builds it in AWS: archive objects and digests read from S3
// (fauxqs speaks the S3 API on 127.0.0.1) and the digest key's public half from KMS GetPublicKey.
// KMS has no emulator: an HTTP fake answers GetPublicKey in the documented JSON protocol
// (AWS KMS API Reference, GetPublicKey: X-Amz-Target TrentService.GetPublicKey, response PublicKey as
// base64 DER SubjectPublicKeyInfo, KeyUsage SIGN_VERIFY, KeySpec RSA_2048, SigningAlgorithms).
const KEY_ARN = 'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const keys = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'der' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
let app: RunningFauxqs;
let kmsFake: Server;
let kmsCalls: Array<{ target: string; body: Record<string, unknown> }> = [];
let s3: ReturnType<typeof s3Client>;
let kms: KMSClient;
let dir: string;

beforeAll(async () => {
  app = await startFauxqs();
  s3 = s3Client({ region: 'us-east-1', endpoint: app.endpoint });
  await s3.send(new CreateBucketCommand({ Bucket: 'archive' }));
  kmsFake = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += String(d);
    });
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      kmsCalls.push({ target, body: JSON.parse(body || '{}') as Record<string, unknown> });
      res.writeHead(target === 'TrentService.GetPublicKey' ? 200 : 400, {
        'content-type': 'application/x-amz-json-1.1',
      });
      res.end(
        JSON.stringify(
          target === 'TrentService.GetPublicKey'
            ? {
                KeyId: KEY_ARN,
                KeySpec: 'RSA_2048',
                KeyUsage: 'SIGN_VERIFY',
                PublicKey: Buffer.from(keys.publicKey).toString('base64'),
                SigningAlgorithms: ['RSASSA_PSS_SHA_256', 'RSASSA_PKCS1_V1_5_SHA_256'],
              }
            : { __type: 'UnsupportedOperationException', message: target },
        ),
      );
    });
  });
  const kmsPort = await freePort();
  await new Promise<void>((resolve) => kmsFake.listen(kmsPort, '127.0.0.1', resolve));
  kms = new KMSClient({
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${kmsPort}`,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  dir = await mkdtemp(join(tmpdir(), 'sendproof-aws-export-'));
});

afterAll(async () => {
  await app.stop();
  await new Promise<void>((resolve) => kmsFake.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

describe('the export bundle in AWS', () => {
  it('reads the archive from S3 and the public key from KMS, and verifies offline as a local bundle does', async () => {
    // Prepare: a decided row archived in S3, its day signed with the (KMS) key the digests name
    const clock = new ManualClock(Date.parse('2026-12-01T10:00:00Z'));
    const ledger = new MemoryLedger();
    const row = await seedRow(ledger, clock, { eventId: 'aws-1', state: 'accepted', transport: 'ses' });
    const store = new S3Store(s3, 'archive');
    await archiveRows(store, [row]);
    const signer = localSigner(keys.privateKey, KEY_ARN);
    await createDigests({ store, signer, now: () => clock.now() });
    kmsCalls = [];
    const exporter = s3BundleExporter(s3, 'archive', kms, KEY_ARN);

    // Act: two exports (the key is read once per process)
    const bundle = await exporter(row.pk, { tenant: row.tenant, from: '2026-12-01', to: '2026-12-01' });
    await exporter(row.pk, { tenant: row.tenant, from: '2026-12-01', to: '2026-12-01' });
    const out = join(dir, 'bundle');
    await unpackBundleDocument(bundle, out);
    const report = await verifyBundle(out, spkiDerToPem(keys.publicKey));

    // Assess
    expect(kmsCalls).toEqual([{ target: 'TrentService.GetPublicKey', body: { KeyId: KEY_ARN } }]);
    expect(bundle.manifest).toMatchObject({ subject: row.pk, signingKeyId: KEY_ARN, transitions: 3 });
    expect(bundle.manifest.digests).toHaveLength(1);
    expect(report).toMatchObject({ ok: true, bundleProblems: [], badSignatures: [] });
    const pem = Buffer.from(bundle.files.find((f) => f.path === 'public-key.pem')!.base64, 'base64');
    expect(pem.toString('utf8')).toBe(spkiDerToPem(keys.publicKey));
  });

  it('refuses a KMS key that is not a signing key instead of exporting an unverifiable bundle', async () => {
    const encryptOnly = new KMSClient({
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${(kmsFake.address() as { port: number }).port}`,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    // An encryption key has a public half too (KeyUsage ENCRYPT_DECRYPT): it never signed a digest.
    const original = kmsFake.listeners('request')[0] as (...args: unknown[]) => void;
    kmsFake.removeAllListeners('request');
    kmsFake.on('request', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(
        JSON.stringify({
          KeyId: KEY_ARN,
          KeySpec: 'RSA_2048',
          KeyUsage: 'ENCRYPT_DECRYPT',
          PublicKey: Buffer.from(keys.publicKey).toString('base64'),
        }),
      );
    });
    try {
      const exporter = s3BundleExporter(s3, 'archive', encryptOnly, KEY_ARN);
      await expect(
        exporter('x', { tenant: 'acme-games', from: '2026-12-01', to: '2026-12-01' }),
      ).rejects.toThrow(/not a signing key/);
    } finally {
      kmsFake.removeAllListeners('request');
      kmsFake.on('request', original);
    }
  });
});
