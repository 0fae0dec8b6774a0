import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDigests,
  ensureLocalDigestKey,
  type LocalDigestKey,
  localSigner,
  verifyArchive,
} from '../../../lib/archive/digest.js';
import { kmsSigner } from '../../../lib/archive/kmsSigner.js';
import { DirStore } from '../../../lib/archive/store.js';
import { DAY1, DAY2, writeBatch, writeScenarioArchive } from '../../fixtures/archive/scenario.js';
import { notificationRecords } from '../../fixtures/archive/streamRecords.js';

// Real files (the local mirror), real RSA-PSS signatures (node:crypto), the real digester and verifier.
describe('signed archive digests on the local mirror', () => {
  let root: string;
  let key: LocalDigestKey;
  const scratch: string[] = [];

  const fresh = async () => {
    const dir = await mkdtemp(join(root, 'archive-'));
    scratch.push(dir);
    const { keys } = await writeScenarioArchive(dir);
    const store = new DirStore(dir);
    const signer = localSigner(key.privateKeyPem, key.keyId);
    const verify = (from = DAY1, to = DAY2) =>
      verifyArchive({ store, publicKeys: new Map([[key.keyId, key.publicKeyPem]]), from, to });
    return { dir, keys, store, signer, verify };
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sendproof-digest-'));
    key = ensureLocalDigestKey(join(root, 'keys'));
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('an untouched archive verifies: every object listed, every signature good, one chain', async () => {
    // Prepare
    const { store, signer, verify, keys } = await fresh();

    // Act
    const written = await createDigests({ store, signer, now: () => Date.parse('2026-12-02T00:10:00Z') });
    const report = await verify();

    // Assess: one digest per partition (tenant default, two days).
    expect(written.map((k) => k.replace(/\/\d{8}T\d{9}Z-/, '/<t>-'))).toEqual([
      'digests/tenant=default/<t>-dt=2026-11-30.json',
      'digests/tenant=default/<t>-dt=2026-12-01.json',
    ]);
    expect(report).toEqual({
      ok: true,
      digests: 2,
      objects: new Set(keys).size,
      missing: [],
      changed: [],
      added: [],
      badSignatures: [],
      chainBreaks: [],
    });
  });

  it('names exactly the object altered, the object deleted and the object inserted', async () => {
    // Prepare
    const { dir, store, signer, verify, keys } = await fresh();
    await createDigests({ store, signer });
    const [altered, deleted] = [keys[0]!, keys[1]!];
    const inserted = 'transitions/tenant=default/dt=2026-11-30/9999999999-9999999999.jsonl.gz';

    // Act
    await writeFile(join(dir, altered), gzipSync('{"dedupe_key":"forged","version":1}\n'));
    await unlink(join(dir, deleted));
    await writeFile(join(dir, inserted), gzipSync('{"dedupe_key":"slipped-in","version":1}\n'));
    const report = await verify();

    // Assess
    expect(report.ok).toBe(false);
    expect({ changed: report.changed, missing: report.missing, added: report.added }).toEqual({
      changed: [altered],
      missing: [deleted],
      added: [inserted],
    });
    expect(report.badSignatures).toEqual([]);
    expect(report.chainBreaks).toEqual([]);
  });

  it('a later batch gets its own digest on the next run, chained to the last one', async () => {
    // Prepare
    const { dir, store, signer, verify } = await fresh();
    const first = await createDigests({ store, signer });
    const late = notificationRecords({ eventId: 'evt-late', recipientRef: 'u-9', channel: 'email' }, [
      { s: 'claimed', at: Date.parse(`${DAY2}T23:00:00Z`), by: 'dispatch:w1' },
    ]);
    const [lateKey] = await writeBatch(dir, late);

    // Act
    const before = await verify();
    const second = await createDigests({ store, signer });
    const after = await verify();

    // Assess
    expect(before.added).toEqual([lateKey]);
    expect(second).toHaveLength(1);
    const payload = JSON.parse((await store.get(second[0]!))!.toString('utf8').split('\n')[0]!);
    expect(payload.previousDigestKey).toBe(first[first.length - 1]);
    expect(payload.objects.map((o: { key: string }) => o.key)).toEqual([lateKey]);
    expect(after.ok).toBe(true);
  });

  it('an edited digest fails its signature; a removed digest breaks the chain', async () => {
    // Prepare
    const { dir, store, signer, verify } = await fresh();
    const [day1, day2] = await createDigests({ store, signer });
    const text = (await store.get(day1!))!.toString('utf8');

    // Act
    await writeFile(join(dir, day1!), text.replace(/"records":\d+/, '"records":999'));
    const edited = await verify();
    await unlink(join(dir, day1!));
    const removed = await verify();

    // Assess
    expect(edited.badSignatures).toEqual([day1]);
    expect(removed.chainBreaks).toEqual([`${day2}: previous digest ${day1} is missing`]);
    expect(removed.added.length).toBeGreaterThan(0);
  });

  it('a digest signed by another key is not trusted', async () => {
    // Prepare
    const { store, verify } = await fresh();
    const other = ensureLocalDigestKey(join(root, 'other-keys'));
    await createDigests({ store, signer: localSigner(other.privateKeyPem, key.keyId) });

    // Act
    const report = await verify();

    // Assess
    expect(report.badSignatures).toHaveLength(2);
    expect(report.ok).toBe(false);
  });

  it('the KMS signer asks KMS to sign the SHA-256 of the payload with RSASSA_PSS_SHA_256', async () => {
    // Prepare: no KMS emulator here; a client that records the command it is sent.
    const sent: unknown[] = [];
    const kms = {
      send: async (command: { input: unknown }) => {
        sent.push(command.input);
        return { Signature: new Uint8Array([1, 2, 3]) };
      },
    } as unknown as KMSClient;

    // Act
    const signature = await kmsSigner(kms, 'alias/sendproof-digests').sign(Buffer.from('payload'));

    // Assess
    expect(signature).toEqual(Buffer.from([1, 2, 3]));
    expect(sent).toEqual([
      {
        KeyId: 'alias/sendproof-digests',
        Message: Buffer.from('239f59ed55e737c77147cf55ad0c1b030b6d7ee748a7426952f9b852d5a935e5', 'hex'),
        MessageType: 'DIGEST',
        SigningAlgorithm: 'RSASSA_PSS_SHA_256',
      },
    ]);
  });
});
