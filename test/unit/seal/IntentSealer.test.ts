import { describe, expect, it } from 'vitest';
import { kmsSealer, localSealer, SealError } from '../../../lib/seal/IntentSealer.js';

const KEY = Buffer.from('sendproof-test-fixture-key-32byt', 'utf8');
const BODY = '{"to":"fixture@example.com","otp":"123456"}';
const LOGICAL_KEY = 'tenant-a#order-42#email';

/**
 * Sealed by the previous sealer (`@aws-crypto/client-node` 5.0.2's `buildClient`, commit 7884f86) with the
 * key above: rows parked before the sealer moved to the Encryption SDK's own packages hold bodies like this
 * one, and they must still open. An AWS Encryption SDK message (format version 2, committing suite).
 */
const SEALED_BY_CLIENT_NODE =
  'AgV46Fri2/U9ayrmnIqo2JGrsR1R7L2RUrku+OZOJH4zeKgAjwACABVhd3MtY3J5cHRvLXB1YmxpYy1rZXkAREFuU2hoVVo1TEpBaXZYcUJkSnBiOXBmUDVQK2RzYUZXZld0ZjMyTXRlb2dmdDlXMTM1ZU9KdUpoUEZuK0NLcGxxUT09ABVzZW5kcHJvb2Y6bG9naWNhbC1rZXkAF3RlbmFudC1hI29yZGVyLTQyI2VtYWlsAAEACXNlbmRwcm9vZgAZbG9jYWwAAACAAAAADC52ul0Re1M3BSTCcwAwIiOHonE1lR4pBhDKY+u3CvwPZvZVkQTTgAdOPqw7lOs5vr3EjFC46aqiosYVg1cNAgAAEAB1zFJMlFi4g8J//GtfUhurhDAs2uf/+UGeUNDmi6JOJgTdrlfC40u9FI76ogN8reT/////AAAAAQAAAAAAAAAAAAAAAQAAACsOnZxD0VKGXxHYpk7JqZ5JheijS0ZDhiaslaYYUr3MPUItiNbCGE8hZSCpcBK/BgQlbaLK4QYW9c4snQBoMGYCMQD+UVllQn6NZwZjkWVstW2tI6JUeFpcr6mN8Dl7XMITalWYOM/936rz+gc6AnQqViECMQCwqkSjOBU/NeenVcyF4e6FVOmdLCG4JSQXVs8fJGRdQD9HGarBhtm2xE4oGt9N+fM=';

describe('IntentSealer (AWS Encryption SDK)', () => {
  it('opens a body sealed by the earlier @aws-crypto/client-node sealer', async () => {
    expect(await localSealer(KEY).open(SEALED_BY_CLIENT_NODE, LOGICAL_KEY)).toBe(BODY);
  });

  it('refuses that body under another logical key or another key', async () => {
    await expect(localSealer(KEY).open(SEALED_BY_CLIENT_NODE, 'tenant-a#order-43#email')).rejects.toThrow(
      SealError,
    );
    const other = localSealer(Buffer.from('another-seal-key-of-32-bytes-abc', 'utf8'));
    await expect(other.open(SEALED_BY_CLIENT_NODE, LOGICAL_KEY)).rejects.toThrow(SealError);
  });

  it('seals in the same message format: a fresh seal opens, and is not the plaintext', async () => {
    const sealer = localSealer(KEY);
    const sealed = await sealer.seal(BODY, LOGICAL_KEY);
    expect(sealed).not.toContain('fixture@example.com');
    // Version 2 messages start with byte 0x02 and carry the committing suite 0x0578 (ECDSA P-384).
    expect(Buffer.from(sealed, 'base64').subarray(0, 3)).toEqual(
      Buffer.from(SEALED_BY_CLIENT_NODE, 'base64').subarray(0, 3),
    );
    expect(await sealer.open(sealed, LOGICAL_KEY)).toBe(BODY);
  });

  it('builds a KMS sealer without calling KMS (the keyring calls it per seal)', () => {
    expect(
      kmsSealer('arn:aws:kms:us-east-1:111122223333:key/00000000-0000-0000-0000-000000000000'),
    ).toBeDefined();
  });
});
