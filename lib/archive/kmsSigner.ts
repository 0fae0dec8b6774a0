import { createHash } from 'node:crypto';
import { type KMSClient, SignCommand } from '@aws-sdk/client-kms';
import { SendproofError } from '../domain/errors.js';
import { type DigestSigner, SIGNATURE_ALGORITHM } from './digest.js';

// Apart from lib/archive/digest.ts so archive maintenance loads the KMS client only when a partition has
// objects to sign (functions/archive-maintenance/index.ts), not at its cold start.
/**
 * The KMS asymmetric key as signer. KMS signs at most 4 KB of RAW message, so it is handed the SHA-256
 * of the payload (MessageType DIGEST); the signature is the same as over the payload itself, which is
 * what `verifyDigestSignature` checks with the key's public half (GetPublicKey) and node:crypto.
 */
export const kmsSigner = (kms: KMSClient, keyId: string): DigestSigner => ({
  keyId,
  sign: async (message) => {
    const out = await kms.send(
      new SignCommand({
        KeyId: keyId,
        Message: createHash('sha256').update(message).digest(),
        MessageType: 'DIGEST',
        SigningAlgorithm: SIGNATURE_ALGORITHM,
      }),
    );
    if (!out.Signature) throw new SendproofError('retryable', 'unsigned_digest', 'KMS returned no signature');
    return Buffer.from(out.Signature);
  },
});
