// The Encryption SDK's own packages, not their umbrella `@aws-crypto/client-node`: the umbrella also
// bundles the hierarchical keyring's key store, whose DynamoDB commands code splitting then put in the chunk
// the dispatcher's cold start reads (docs/benchmark.md, "Cold start"). Same code, same message format.
import { buildDecrypt } from '@aws-crypto/decrypt-node';
import { buildEncrypt } from '@aws-crypto/encrypt-node';
import { KmsKeyringNode } from '@aws-crypto/kms-keyring-node';
import { CommitmentPolicy, type KeyringNode } from '@aws-crypto/material-management-node';
import { RawAesKeyringNode, RawAesWrappingSuiteIdentifier } from '@aws-crypto/raw-aes-keyring-node';
import { SendproofError } from '../domain/errors.js';

/**
 * Keeps an intent body (which holds the reset link, the OTP, the address) only as ciphertext, so the
 * ledger can resume parked work after its queue message is gone. The ledger row and the archive never see
 * it; only the dispatcher opens it.
 */
export interface IntentSealer {
  /** Encrypts `body`; the logical key is bound as encryption context, so a sealed body cannot be moved. */
  seal(body: string, logicalKey: string): Promise<string>;
  /** Decrypts and checks the encryption context. Throws `SealError` for anything else. */
  open(sealed: string, logicalKey: string): Promise<string>;
}

export class SealError extends SendproofError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super('permanent', code, message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

const CONTEXT_KEY = 'sendproof:logical-key';

/**
 * The AWS Encryption SDK with one keyring: a KMS keyring in AWS, a raw AES-256 keyring locally. The
 * commitment policy requires key commitment on both sides (the SDK's strictest setting).
 */
export class EncryptionSdkSealer implements IntentSealer {
  // What `buildClient(policy)` of @aws-crypto/client-node returns: these two, with the SDK's defaults.
  private readonly client = {
    ...buildEncrypt(CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT),
    ...buildDecrypt(CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT),
  };

  constructor(private readonly keyring: KeyringNode) {}

  async seal(body: string, logicalKey: string): Promise<string> {
    const { result } = await this.client.encrypt(this.keyring, body, {
      encryptionContext: { [CONTEXT_KEY]: logicalKey },
    });
    return result.toString('base64');
  }

  async open(sealed: string, logicalKey: string): Promise<string> {
    let out: Awaited<ReturnType<typeof this.client.decrypt>>;
    try {
      out = await this.client.decrypt(this.keyring, Buffer.from(sealed, 'base64'));
    } catch (error) {
      throw new SealError('seal_unreadable', 'the sealed intent could not be decrypted', { cause: error });
    }
    if (out.messageHeader.encryptionContext[CONTEXT_KEY] !== logicalKey)
      throw new SealError('seal_context_mismatch', 'the sealed intent belongs to another notification');
    return out.plaintext.toString('utf8');
  }
}

/** A KMS keyring for a deployed stack: the key ARN comes from configuration. */
export const kmsSealer = (keyArn: string): EncryptionSdkSealer =>
  new EncryptionSdkSealer(new KmsKeyringNode({ generatorKeyId: keyArn }));

/** A raw AES-256-GCM keyring for laptops and tests: a 32-byte key. */
export const localSealer = (key: Uint8Array, keyName = 'local'): EncryptionSdkSealer => {
  if (key.byteLength !== 32) throw new SealError('seal_key_length', 'the local seal key must be 32 bytes');
  // The SDK takes ownership of the buffer it is given (it zeroes it on release): hand it a copy.
  const unencryptedMasterKey = new Uint8Array(key);
  return new EncryptionSdkSealer(
    new RawAesKeyringNode({
      keyName,
      keyNamespace: 'sendproof',
      unencryptedMasterKey,
      wrappingSuite: RawAesWrappingSuiteIdentifier.AES256_GCM_IV12_TAG16_NO_PADDING,
    }),
  );
};
