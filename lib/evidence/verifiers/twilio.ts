// The request validator only: the package root loads the whole REST client.
import { validateRequest } from 'twilio/lib/webhooks/webhooks.js';

/**
 * Twilio's `validateRequest`: HMAC-SHA1 over the URL and the sorted form parameters, keyed by the auth
 * token. Its own module, loaded on the first Twilio request (lib/evidence/webhooks.ts).
 */
export const verifyTwilio = (
  authToken: string,
  signature: string,
  url: string,
  params: Record<string, string>,
): boolean => validateRequest(authToken, signature, url, params);
