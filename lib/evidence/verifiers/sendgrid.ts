import { EventWebhook } from '@sendgrid/eventwebhook';

/**
 * SendGrid's `EventWebhook.verifySignature`: ECDSA P-256 over timestamp + body with the verification key.
 * Its own module: the ECDSA library (starkbank-ecdsa, big-integer) is the largest of the three verifiers
 * and loads on the first SendGrid request only (lib/evidence/webhooks.ts).
 */
export const verifySendGrid = (
  publicKey: string,
  body: string,
  signature: string,
  timestamp: string,
): boolean => {
  const verifier = new EventWebhook();
  try {
    return verifier.verifySignature(verifier.convertPublicKeyToECDSA(publicKey), body, signature, timestamp);
  } catch {
    return false;
  }
};
