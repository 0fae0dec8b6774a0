import type { Config } from '../config.js';
import { ConfigurationError } from '../domain/errors.js';
import { type WebhookSecrets, WebhookSecretsSchema } from './webhooks.js';

const parse = (value: unknown, where: string): WebhookSecrets => {
  const raw = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  const parsed = WebhookSecretsSchema.safeParse(raw);
  // The message names fields only, never values.
  if (!parsed.success)
    throw new ConfigurationError(
      `${where} must be JSON { resend?, twilio?, sendgrid? }: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`,
    );
  return parsed.data;
};

/**
 * Webhook signing secrets: from Secrets Manager (cached five minutes by Powertools, so a rotation lands
 * without a deploy) or, locally, from SENDPROOF_WEBHOOK_SECRETS. None configured: every request is 401.
 */
export const webhookSecretsFor = (config: Config): (() => Promise<WebhookSecrets>) => {
  if (config.webhookSecretArn) {
    const arn = config.webhookSecretArn;
    // Loaded on the first request, not at init; Powertools caches in the module, so a reload is never needed.
    return async () => {
      const { getSecret } = await import('@aws-lambda-powertools/parameters/secrets');
      return parse(await getSecret(arn, { maxAge: 300 }), 'the webhook secret');
    };
  }
  const local = config.webhookSecrets ? parse(config.webhookSecrets, 'SENDPROOF_WEBHOOK_SECRETS') : {};
  return async () => local;
};
