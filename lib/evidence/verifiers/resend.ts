import { Webhook, WebhookVerificationError } from 'svix';

/**
 * Resend signs with Svix: `Webhook.verify` checks the HMAC over id.timestamp.body and refuses stale or
 * future timestamps. Its own module so the webhook function loads Svix on the first Resend request only
 * (lib/evidence/webhooks.ts).
 */
export const verifyResend = (
  secret: string,
  body: string,
  headers: { 'svix-id': string; 'svix-timestamp': string; 'svix-signature': string },
): 'valid' | 'replayed' | 'forged' => {
  try {
    new Webhook(secret).verify(body, headers);
    return 'valid';
  } catch (error) {
    if (error instanceof WebhookVerificationError && /timestamp/i.test(error.message)) return 'replayed';
    return 'forged';
  }
};
