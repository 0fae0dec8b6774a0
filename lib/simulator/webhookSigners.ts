import { createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import { Webhook } from 'svix';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import type { WebhookSecrets } from '../evidence/webhooks.js';

/**
 * Test double: signs webhook requests the way Resend (Svix), Twilio and SendGrid do, with throw-away keys,
 * so the simulator and tests drive the real verifiers. Never used to verify anything.
 */
export interface SigningKeys {
  /** What the endpoint verifies with (the shape of the deployed webhook secret). */
  secrets: Required<WebhookSecrets>;
  /** SendGrid's private key: only the provider has it. */
  sendgridPrivateKeyPem: string;
}

export const generateSigningKeys = (): SigningKeys => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    secrets: {
      resend: `whsec_${randomBytes(24).toString('base64')}`,
      twilio: randomBytes(16).toString('hex'),
      sendgrid: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    },
    sendgridPrivateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
};

export interface SignedRequest {
  headers: Record<string, string>;
  body: string;
}

/** Svix: `svix-id`, `svix-timestamp` (seconds), `svix-signature` = `v1,<base64 HMAC>`. */
export const signResend = (
  keys: SigningKeys,
  payload: unknown,
  at = new Date(),
  id = `msg_${randomBytes(8).toString('hex')}`,
): SignedRequest => {
  const body = JSON.stringify(payload);
  const signature = new Webhook(keys.secrets.resend).sign(id, at, body);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'svix-id': id,
      'svix-timestamp': String(Math.floor(at.getTime() / 1000)),
      'svix-signature': signature,
    },
  };
};

/** Twilio: form-encoded params, `X-Twilio-Signature` over the full URL and the sorted params. */
export const signTwilio = (
  keys: SigningKeys,
  url: string,
  params: Record<string, string>,
): SignedRequest => ({
  body: new URLSearchParams(params).toString(),
  headers: {
    'content-type': 'application/x-www-form-urlencoded',
    'x-twilio-signature': getExpectedTwilioSignature(keys.secrets.twilio, url, params),
  },
});

/** SendGrid: ECDSA P-256 / SHA-256 over `timestamp + body`, base64 DER, with the timestamp header. */
export const signSendGrid = (keys: SigningKeys, events: unknown[], at = new Date()): SignedRequest => {
  const body = JSON.stringify(events);
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signer = createSign('sha256');
  signer.update(timestamp + body);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-twilio-email-event-webhook-signature': signer.sign(keys.sendgridPrivateKeyPem, 'base64'),
      'x-twilio-email-event-webhook-timestamp': timestamp,
    },
  };
};
