import {
  constants,
  createHash,
  createPublicKey,
  generateKeyPairSync,
  sign as rsaSign,
  verify as rsaVerify,
} from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { SendproofError } from '../domain/errors.js';
import { type Partition, partitionOfKey } from './objectKey.js';
import { ARCHIVE_PREFIX } from './schema.js';
import type { ArchiveStore } from './store.js';

/**
 * Signed digests, after CloudTrail's digest files: for every archive partition (tenant, day) a digest
 * object lists each archive object's key, sha256 and record count, plus the key and sha256 of the
 * tenant's previous digest (a chain), signed RSASSA-PSS SHA-256 — by a KMS asymmetric key in AWS, by a
 * local RSA key in the local stack. Anyone with the public key can then prove, offline, that a day's
 * archive is complete and unaltered: an object deleted, changed or slipped in, and a digest removed or
 * edited, all show.
 *
 * A digest covers the objects of its partition not listed by an earlier digest, so objects that land
 * after a partition was digested (a late batch, a backfill) get a digest of their own on the next run.
 *
 * Digest object: `digests/tenant=<t>/<created, compact ISO>-dt=<YYYY-MM-DD>.json`, two lines: the
 * payload JSON (the signed bytes) and the base64 signature. Keys sort in creation order = chain order.
 */
export const DIGEST_PREFIX = 'digests/';
export const SIGNATURE_ALGORITHM = 'RSASSA_PSS_SHA_256';

export interface DigestObjectEntry {
  key: string;
  sha256: string;
  records: number;
}

export interface DigestPayload {
  digestVersion: 1;
  tenant: string;
  dt: string;
  createdAt: string;
  objects: DigestObjectEntry[];
  previousDigestKey: string | null;
  previousDigestSha256: string | null;
  signingKeyId: string;
  signatureAlgorithm: typeof SIGNATURE_ALGORITHM;
}

export interface DigestSigner {
  keyId: string;
  /** RSASSA-PSS SHA-256 signature of the message (salt length 32, as KMS uses). */
  sign(message: Buffer): Promise<Buffer>;
}

export const sha256Hex = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

const PSS = { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } as const;

/** A local RSA key (PEM, PKCS#8) as signer: the local stack's stand-in for the KMS key. */
export const localSigner = (privateKeyPem: string, keyId: string): DigestSigner => ({
  keyId,
  sign: async (message) => rsaSign('sha256', message, { key: privateKeyPem, ...PSS }),
});

export const verifyDigestSignature = (publicKeyPem: string, message: Buffer, signature: Buffer): boolean => {
  try {
    return rsaVerify('sha256', message, { key: publicKeyPem, ...PSS }, signature);
  } catch {
    return false;
  }
};

/** The key id of a public key: `local:` + the first 16 hex digits of the SHA-256 of its DER (SPKI). */
export const publicKeyId = (publicKeyPem: string): string =>
  `local:${sha256Hex(createPublicKey(publicKeyPem).export({ type: 'spki', format: 'der' })).slice(0, 16)}`;

export interface LocalDigestKey {
  privateKeyPem: string;
  publicKeyPem: string;
  keyId: string;
  publicKeyPath: string;
}

/** The local stack's digest key in `dir` (created on first use). Local only: in AWS the key is in KMS. */
export const ensureLocalDigestKey = (dir: string): LocalDigestKey => {
  const privatePath = join(dir, 'digest-signing-key.pem');
  const publicKeyPath = join(dir, 'digest-public-key.pem');
  if (!existsSync(privatePath)) {
    mkdirSync(dir, { recursive: true });
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    writeFileSync(privatePath, privateKey, { mode: 0o600 });
    writeFileSync(publicKeyPath, publicKey);
  }
  const publicKeyPem = readFileSync(publicKeyPath, 'utf8');
  return {
    privateKeyPem: readFileSync(privatePath, 'utf8'),
    publicKeyPem,
    keyId: publicKeyId(publicKeyPem),
    publicKeyPath,
  };
};

export const encodeDigest = (payload: DigestPayload, signature: Buffer): Buffer =>
  Buffer.from(`${JSON.stringify(payload)}\n${signature.toString('base64')}\n`);

export interface ParsedDigest {
  key: string;
  bytes: Buffer;
  payload: DigestPayload;
  /** The exact signed bytes (the first line). */
  signed: Buffer;
  signature: Buffer;
}

export const parseDigest = (key: string, bytes: Buffer): ParsedDigest => {
  const text = bytes.toString('utf8');
  const newline = text.indexOf('\n');
  if (newline < 0)
    throw new SendproofError('permanent', 'digest_format', `${key}: not a digest (no signature line)`);
  const signed = Buffer.from(text.slice(0, newline));
  const payload = JSON.parse(signed.toString('utf8')) as DigestPayload;
  if (payload.digestVersion !== 1 || !Array.isArray(payload.objects))
    throw new SendproofError('permanent', 'digest_format', `${key}: not a version 1 digest`);
  return { key, bytes, payload, signed, signature: Buffer.from(text.slice(newline + 1).trim(), 'base64') };
};

const compactTime = (iso: string): string => iso.replace(/[-:.]/g, '');

export const digestKeyOf = (tenant: string, dt: string, createdAt: string): string =>
  `${DIGEST_PREFIX}tenant=${tenant}/${compactTime(createdAt)}-dt=${dt}.json`;

const tenantOfDigestKey = (key: string): string | undefined =>
  /^digests\/tenant=([^/]+)\/\d{8}T\d{9}Z-dt=\d{4}-\d{2}-\d{2}\.json$/.exec(key)?.[1];

/** Record count of an archive object (its JSON lines). */
export const recordCount = (gzipped: Buffer): number =>
  gunzipSync(gzipped)
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim()).length;

const loadDigests = async (store: ArchiveStore, tenant: string): Promise<ParsedDigest[]> => {
  const digests: ParsedDigest[] = [];
  for (const key of await store.list(`${DIGEST_PREFIX}tenant=${tenant}/`)) {
    const bytes = await store.get(key);
    if (bytes) digests.push(parseDigest(key, bytes));
  }
  return digests;
};

const partitionsIn = (keys: readonly string[]): Map<string, { partition: Partition; keys: string[] }> => {
  const groups = new Map<string, { partition: Partition; keys: string[] }>();
  for (const key of keys) {
    const partition = partitionOfKey(key);
    if (!partition) continue;
    const id = `${partition.tenant}/${partition.date}`;
    const group = groups.get(id) ?? { partition, keys: [] };
    group.keys.push(key);
    groups.set(id, group);
  }
  return groups;
};

export interface CreateDigestsOptions {
  store: ArchiveStore;
  signer: DigestSigner;
  now?: () => number;
  /** Only these tenants / days (default: every partition in the archive). */
  tenant?: string;
  from?: string;
  to?: string;
}

/** Writes one signed digest per partition that has objects no digest lists yet. Returns the new keys. */
export const createDigests = async (options: CreateDigestsOptions): Promise<string[]> => {
  const { store, signer } = options;
  const now = options.now ?? Date.now;
  const prefix = options.tenant ? `${ARCHIVE_PREFIX}tenant=${options.tenant}/` : ARCHIVE_PREFIX;
  const groups = [...partitionsIn(await store.list(prefix)).values()]
    .filter(
      ({ partition: p }) =>
        (!options.from || p.date >= options.from) && (!options.to || p.date <= options.to),
    )
    .sort((a, b) =>
      `${a.partition.tenant}/${a.partition.date}`.localeCompare(`${b.partition.tenant}/${b.partition.date}`),
    );
  const written: string[] = [];
  const chains = new Map<
    string,
    { digests: ParsedDigest[]; head?: { key: string; sha256: string; at: number } }
  >();
  for (const { partition, keys } of groups) {
    let chain = chains.get(partition.tenant);
    if (!chain) {
      const digests = await loadDigests(store, partition.tenant);
      const last = digests[digests.length - 1];
      chain = {
        digests,
        ...(last
          ? { head: { key: last.key, sha256: sha256Hex(last.bytes), at: Date.parse(last.payload.createdAt) } }
          : {}),
      };
      chains.set(partition.tenant, chain);
    }
    const covered = new Set(
      chain.digests
        .filter((d) => d.payload.dt === partition.date)
        .flatMap((d) => d.payload.objects.map((o) => o.key)),
    );
    const fresh = keys.filter((key) => !covered.has(key));
    if (fresh.length === 0) continue;
    const objects: DigestObjectEntry[] = [];
    for (const key of fresh) {
      const bytes = await store.get(key);
      if (!bytes) continue;
      objects.push({ key, sha256: sha256Hex(bytes), records: recordCount(bytes) });
    }
    // Creation times strictly increase along a tenant's chain, so key order is chain order.
    const at = Math.max(now(), (chain.head?.at ?? 0) + 1);
    const createdAt = new Date(at).toISOString();
    const payload: DigestPayload = {
      digestVersion: 1,
      tenant: partition.tenant,
      dt: partition.date,
      createdAt,
      objects,
      previousDigestKey: chain.head?.key ?? null,
      previousDigestSha256: chain.head?.sha256 ?? null,
      signingKeyId: signer.keyId,
      signatureAlgorithm: SIGNATURE_ALGORITHM,
    };
    const signed = Buffer.from(JSON.stringify(payload));
    const bytes = encodeDigest(payload, await signer.sign(signed));
    const key = digestKeyOf(partition.tenant, partition.date, createdAt);
    await store.put(key, bytes, { ContentType: 'application/json' });
    chain.digests.push(parseDigest(key, bytes));
    chain.head = { key, sha256: sha256Hex(bytes), at };
    written.push(key);
  }
  return written;
};

export interface VerifyReport {
  ok: boolean;
  digests: number;
  objects: number;
  /** Listed by a digest, gone from the archive. */
  missing: string[];
  /** Present, but its sha256 differs from the digest's. */
  changed: string[];
  /** Present in a verified partition, listed by no digest. */
  added: string[];
  /** Digests whose signature does not verify with the trusted public key. */
  badSignatures: string[];
  /** Links of the chain that do not hold (a digest removed, altered or inserted). */
  chainBreaks: string[];
}

export interface VerifyOptions {
  store: ArchiveStore;
  /** Trusted public keys by key id (PEM). */
  publicKeys: ReadonlyMap<string, string>;
  from: string;
  to: string;
  tenant?: string;
  /**
   * Only these object keys are expected present (an export bundle holds some objects of a partition,
   * not all): objects listed by a digest but not here are not reported missing.
   */
  objectsInScope?: ReadonlySet<string>;
}

const tenantsOf = (keys: readonly string[]): string[] =>
  [
    ...new Set(
      keys
        .map((k) => /^(?:transitions|digests)\/tenant=([^/]+)\//.exec(k)?.[1])
        .filter((t): t is string => Boolean(t)),
    ),
  ].sort();

/** Checks signatures, the chain, and every object of the partitions in [from, to] against the digests. */
export const verifyArchive = async (options: VerifyOptions): Promise<VerifyReport> => {
  const { store, from, to } = options;
  const report: VerifyReport = {
    ok: true,
    digests: 0,
    objects: 0,
    missing: [],
    changed: [],
    added: [],
    badSignatures: [],
    chainBreaks: [],
  };
  const tenants = options.tenant
    ? [options.tenant]
    : tenantsOf([...(await store.list(ARCHIVE_PREFIX)), ...(await store.list(DIGEST_PREFIX))]);
  for (const tenant of tenants) {
    const keys = await store.list(`${DIGEST_PREFIX}tenant=${tenant}/`);
    const digests: ParsedDigest[] = [];
    for (const key of keys) {
      if (tenantOfDigestKey(key) !== tenant) {
        report.chainBreaks.push(`${key}: not a digest key`);
        continue;
      }
      try {
        digests.push(parseDigest(key, (await store.get(key))!));
      } catch (error) {
        report.badSignatures.push(`${key}: ${(error as Error).message}`);
      }
    }
    const byKey = new Map(digests.map((d) => [d.key, d]));
    const expected = new Map<string, DigestObjectEntry>();
    for (const [i, digest] of digests.entries()) {
      const { payload } = digest;
      const publicKey = options.publicKeys.get(payload.signingKeyId);
      const signed =
        publicKey !== undefined &&
        payload.signatureAlgorithm === SIGNATURE_ALGORITHM &&
        verifyDigestSignature(publicKey, digest.signed, digest.signature);
      if (!signed) {
        report.badSignatures.push(digest.key);
        continue;
      }
      if (payload.tenant !== tenant || digest.key !== digestKeyOf(tenant, payload.dt, payload.createdAt))
        report.chainBreaks.push(`${digest.key}: names another place than where it is stored`);
      // The chain: each digest names its predecessor, and the predecessor's bytes still hash the same.
      const previous = i > 0 ? digests[i - 1] : undefined;
      if (payload.previousDigestKey === null) {
        if (previous) report.chainBreaks.push(`${digest.key}: starts a new chain after ${previous.key}`);
      } else if (!byKey.has(payload.previousDigestKey)) {
        report.chainBreaks.push(`${digest.key}: previous digest ${payload.previousDigestKey} is missing`);
      } else if (payload.previousDigestKey !== previous?.key) {
        report.chainBreaks.push(
          `${digest.key}: previous digest is ${payload.previousDigestKey}, not ${previous?.key}`,
        );
      } else if (sha256Hex(previous.bytes) !== payload.previousDigestSha256) {
        report.chainBreaks.push(`${digest.key}: previous digest ${previous.key} was changed`);
      }
      if (payload.dt < from || payload.dt > to) continue;
      report.digests += 1;
      for (const entry of payload.objects) expected.set(entry.key, entry);
    }
    // Every object actually in the partitions of the range, against what the digests list.
    const present = (await store.list(`${ARCHIVE_PREFIX}tenant=${tenant}/`)).filter((key) => {
      const p = partitionOfKey(key);
      return p !== undefined && p.date >= from && p.date <= to;
    });
    const presentSet = new Set(present);
    for (const key of present) {
      report.objects += 1;
      const entry = expected.get(key);
      if (!entry) {
        report.added.push(key);
        continue;
      }
      const bytes = await store.get(key);
      if (!bytes || sha256Hex(bytes) !== entry.sha256) report.changed.push(key);
    }
    for (const key of expected.keys())
      if (!presentSet.has(key) && (!options.objectsInScope || options.objectsInScope.has(key)))
        report.missing.push(key);
  }
  report.ok =
    report.missing.length +
      report.changed.length +
      report.added.length +
      report.badSignatures.length +
      report.chainBreaks.length ===
    0;
  return report;
};
