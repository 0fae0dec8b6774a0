import { z } from 'zod';
import { ConfigurationError } from './domain/errors.js';

/**
 * Every setting Sendproof reads from the environment, parsed once. Nothing else reads process.env.
 * The CDK constructs set these names (see infra/), and the local stack sets them for its servers.
 */
export const ENV = {
  ledgerTable: 'SENDPROOF_LEDGER_TABLE',
  suppressionTable: 'SENDPROOF_SUPPRESSION_TABLE',
  archiveBucket: 'SENDPROOF_ARCHIVE_BUCKET',
  archiveMirrorDir: 'SENDPROOF_ARCHIVE_MIRROR_DIR',
  queueUrl: 'SENDPROOF_QUEUE_URL',
  dlqUrl: 'SENDPROOF_DLQ_URL',
  contentHashKey: 'SENDPROOF_CONTENT_HASH_KEY',
  contentHashSecretArn: 'SENDPROOF_CONTENT_HASH_SECRET_ARN',
  emailTransport: 'SENDPROOF_EMAIL_TRANSPORT',
  smsTransport: 'SENDPROOF_SMS_TRANSPORT',
  emailFrom: 'SENDPROOF_EMAIL_FROM',
  sesConfigurationSet: 'SENDPROOF_SES_CONFIGURATION_SET',
  smsOriginationIdentity: 'SENDPROOF_SMS_ORIGINATION_IDENTITY',
  smsConfigurationSet: 'SENDPROOF_SMS_CONFIGURATION_SET',
  restBaseUrl: 'SENDPROOF_REST_BASE_URL',
  providerSecretArn: 'SENDPROOF_PROVIDER_SECRET_ARN',
  webhookSecretArn: 'SENDPROOF_WEBHOOK_SECRET_ARN',
  webhookSecrets: 'SENDPROOF_WEBHOOK_SECRETS',
  twilioStatusCallbackUrl: 'SENDPROOF_TWILIO_STATUS_CALLBACK_URL',
  localWebhookPort: 'SENDPROOF_LOCAL_WEBHOOK_PORT',
  purposes: 'SENDPROOF_PURPOSES',
  templatesDir: 'SENDPROOF_TEMPLATES_DIR',
  leaseSeconds: 'SENDPROOF_LEASE_SECONDS',
  recordConcurrency: 'SENDPROOF_RECORD_CONCURRENCY',
  endpointDynamoDb: 'SENDPROOF_ENDPOINT_DYNAMODB',
  endpointSqs: 'SENDPROOF_ENDPOINT_SQS',
  endpointS3: 'SENDPROOF_ENDPOINT_S3',
  endpointSes: 'SENDPROOF_ENDPOINT_SES',
  endpointSmsV2: 'SENDPROOF_ENDPOINT_SMS_V2',
  region: 'AWS_REGION',
} as const;

const optionalUrl = z.url().optional();

export const ConfigSchema = z.object({
  ledgerTable: z.string().min(3).optional(),
  suppressionTable: z.string().min(3).optional(),
  archiveBucket: z.string().min(3).optional(),
  archiveMirrorDir: z.string().optional(),
  queueUrl: optionalUrl,
  dlqUrl: optionalUrl,
  /** Local/dev only; in AWS the key comes from Secrets Manager (contentHashSecretArn). */
  contentHashKey: z.string().min(16).optional(),
  contentHashSecretArn: z.string().startsWith('arn:').optional(),
  emailTransport: z.enum(['ses', 'simulator', 'rest', 'resend', 'sendgrid']).default('ses'),
  smsTransport: z.enum(['sms-v2', 'simulator', 'rest', 'twilio']).default('simulator'),
  emailFrom: z.string().min(3).default('no-reply@sendproof.local'),
  sesConfigurationSet: z.string().optional(),
  smsOriginationIdentity: z.string().optional(),
  smsConfigurationSet: z.string().optional(),
  restBaseUrl: optionalUrl,
  providerSecretArn: z.string().startsWith('arn:').optional(),
  /** Webhook signing secrets (JSON `{ resend?, twilio?, sendgrid? }`) in Secrets Manager. */
  webhookSecretArn: z.string().startsWith('arn:').optional(),
  /** Local/dev only: the same JSON inline (the local stack's generated test secrets). */
  webhookSecrets: z.string().optional(),
  /** The evidence endpoint's Twilio path; the key hash is added as `?k=`. */
  twilioStatusCallbackUrl: optionalUrl,
  /** Local stack only: the port the functions worker serves the evidence endpoint on. */
  localWebhookPort: z.coerce.number().int().min(1).max(65_535).optional(),
  purposes: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (!raw) return [] as unknown[];
      try {
        const value = JSON.parse(raw) as unknown;
        if (!Array.isArray(value)) throw new Error('not an array');
        return value as unknown[];
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON array of purpose policies' });
        return z.NEVER;
      }
    }),
  templatesDir: z.string().optional(),
  leaseSeconds: z.coerce.number().int().min(5).max(900).default(90),
  recordConcurrency: z.coerce.number().int().min(1).max(50).default(5),
  endpointDynamoDb: optionalUrl,
  endpointSqs: optionalUrl,
  endpointS3: optionalUrl,
  endpointSes: optionalUrl,
  endpointSmsV2: optionalUrl,
  region: z.string().default('us-east-1'),
});
export type Config = z.output<typeof ConfigSchema>;

export const loadConfig = (env: Readonly<Record<string, string | undefined>> = process.env): Config => {
  const raw = Object.fromEntries(
    Object.entries(ENV)
      .map(([key, name]) => [key, env[name] === '' ? undefined : env[name]])
      .filter(([, value]) => value !== undefined),
  );
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => {
      const key = String(i.path[0] ?? '');
      return `${ENV[key as keyof typeof ENV] ?? key}: ${i.message}`;
    });
    throw new ConfigurationError(`invalid configuration: ${fields.join('; ')}`);
  }
  return parsed.data;
};

/**
 * What each Lambda entry needs at cold start. Entries call `requireSettings` with their list, and the
 * infra tests check every synthesized function environment against the same lists, so a function can
 * never be deployed without a setting its entry reads.
 */
export const FUNCTION_SETTINGS = {
  dispatch: ['ledgerTable', 'suppressionTable'],
  reconcile: ['ledgerTable'],
  evidence: ['ledgerTable', 'suppressionTable'],
  webhook: ['ledgerTable', 'suppressionTable'],
  archive: ['archiveBucket'],
} as const satisfies Record<string, ReadonlyArray<keyof Config>>;

export type FunctionName = keyof typeof FUNCTION_SETTINGS;

export const requireSettings = <K extends keyof Config>(
  config: Config,
  keys: readonly K[],
): Config & { [P in K]-?: NonNullable<Config[P]> } => {
  const missing = keys.filter((key) => config[key] === undefined).map((key) => ENV[key as keyof typeof ENV]);
  if (missing.length > 0) throw new ConfigurationError(`missing configuration: ${missing.join(', ')}`);
  return config as Config & { [P in K]-?: NonNullable<Config[P]> };
};
