import { GetPublicKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import type { S3Client } from '@aws-sdk/client-s3';
import { bundleDocument } from '../archive/bundle.js';
import { type ArchiveStore, S3Store } from '../archive/store.js';
import { SendproofError } from '../domain/errors.js';
import { onFirstUse } from '../onFirstUse.js';
import type { BundleExporter } from './deps.js';

/** A DER SubjectPublicKeyInfo (what KMS GetPublicKey returns) as PEM. */
export const spkiDerToPem = (der: Uint8Array): string =>
  `-----BEGIN PUBLIC KEY-----\n${(
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? []
  ).join('\n')}\n-----END PUBLIC KEY-----\n`;

/**
 * The digest key's public half from KMS (GetPublicKey), once per process: the archive maintenance signs
 * the digests with the KMS key whose id (the key ARN) every digest names, so the bundle carries that id
 * and this public key. A key that is not an RSA signing key is refused.
 */
export const kmsDigestPublicKey = (kms: KMSClient, keyId: string) => {
  // A throttled or failed call is not kept: the next export asks KMS again.
  return onFirstUse(async () => {
    const out = await kms.send(new GetPublicKeyCommand({ KeyId: keyId }));
    if (!out.PublicKey || out.KeyUsage !== 'SIGN_VERIFY')
      throw new SendproofError(
        'permanent',
        'digest_key_unusable',
        `KMS key ${keyId} is not a signing key with a public half`,
      );
    return { publicKeyPem: spkiDerToPem(out.PublicKey), keyId };
  });
};

/**
 * The export bundle in AWS, as locally: the archive objects and digests from the archive bucket (the same
 * keys and bytes as the local mirror), the public key from KMS.
 */
export const archiveBundleExporter =
  (store: ArchiveStore, publicKey: () => Promise<{ publicKeyPem: string; keyId: string }>): BundleExporter =>
  async (subject, scope) => {
    const key = await publicKey();
    return bundleDocument({ store, subject, ...scope, publicKeyPem: key.publicKeyPem, keyId: key.keyId });
  };

export const s3BundleExporter = (s3: S3Client, bucket: string, kms: KMSClient, digestKeyId: string) =>
  archiveBundleExporter(new S3Store(s3, bucket), kmsDigestPublicKey(kms, digestKeyId));
