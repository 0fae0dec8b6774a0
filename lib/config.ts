import * as z from 'zod/mini';
import { ConfigurationError } from './domain/errors.js';
import './domain/zodLocale.js';
import { PROVIDER_CIRCUIT_DEFAULTS as CIRCUIT_DEFAULTS, FAST_RULES, fastConfig } from './configFastPath.js';
import { lazySchema } from './domain/lazySchema.js';
import { ATTENTION_SHARDS } from './ledger/attentionIndex.js';
import { rateSettingsSchema } from './rate/settings.js';
import { EMAIL_TRANSPORTS, SMS_TRANSPORTS } from './transportNames.js';

/**
 * Every setting Sendproof reads from the environment, parsed once. Nothing else reads process.env.
 * The CDK constructs set these names (see infra/), and the local stack sets them for its servers.
 */
export const ENV = {
  ledgerTable: 'SENDPROOF_LEDGER_TABLE',
  suppressionTable: 'SENDPROOF_SUPPRESSION_TABLE',
  archiveBucket: 'SENDPROOF_ARCHIVE_BUCKET',
  archiveMirrorDir: 'SENDPROOF_ARCHIVE_MIRROR_DIR',
  archiveRetentionDays: 'SENDPROOF_ARCHIVE_RETENTION_DAYS',
  archiveFailuresUrl: 'SENDPROOF_ARCHIVE_FAILURES_URL',
  digestKeyId: 'SENDPROOF_DIGEST_KEY_ID',
  queueUrl: 'SENDPROOF_QUEUE_URL',
  dlqUrl: 'SENDPROOF_DLQ_URL',
  contentHashKey: 'SENDPROOF_CONTENT_HASH_KEY',
  contentHashSecretArn: 'SENDPROOF_CONTENT_HASH_SECRET_ARN',
  emailTransport: 'SENDPROOF_EMAIL_TRANSPORT',
  smsTransport: 'SENDPROOF_SMS_TRANSPORT',
  emailProviders: 'SENDPROOF_EMAIL_PROVIDERS',
  smsProviders: 'SENDPROOF_SMS_PROVIDERS',
  providerCircuit: 'SENDPROOF_PROVIDER_CIRCUIT',
  emailFrom: 'SENDPROOF_EMAIL_FROM',
  sesConfigurationSet: 'SENDPROOF_SES_CONFIGURATION_SET',
  smsOriginationIdentity: 'SENDPROOF_SMS_ORIGINATION_IDENTITY',
  smsConfigurationSet: 'SENDPROOF_SMS_CONFIGURATION_SET',
  restBaseUrl: 'SENDPROOF_REST_BASE_URL',
  restKeyRetentionSeconds: 'SENDPROOF_REST_KEY_RETENTION_SECONDS',
  providerSecretArn: 'SENDPROOF_PROVIDER_SECRET_ARN',
  sealKeyArn: 'SENDPROOF_SEAL_KEY_ARN',
  sealLocalKey: 'SENDPROOF_SEAL_LOCAL_KEY',
  maxReceiveCount: 'SENDPROOF_MAX_RECEIVE_COUNT',
  parkGraceSeconds: 'SENDPROOF_PARK_GRACE_SECONDS',
  webhookSecretArn: 'SENDPROOF_WEBHOOK_SECRET_ARN',
  webhookSecrets: 'SENDPROOF_WEBHOOK_SECRETS',
  twilioStatusCallbackUrl: 'SENDPROOF_TWILIO_STATUS_CALLBACK_URL',
  localWebhookPort: 'SENDPROOF_LOCAL_WEBHOOK_PORT',
  athenaWorkGroup: 'SENDPROOF_ATHENA_WORKGROUP',
  athenaDatabase: 'SENDPROOF_ATHENA_DATABASE',
  localSesEmitterPort: 'SENDPROOF_LOCAL_SES_EMITTER_PORT',
  localSesUpstream: 'SENDPROOF_LOCAL_SES_UPSTREAM',
  purposes: 'SENDPROOF_PURPOSES',
  eventBusName: 'SENDPROOF_EVENT_BUS_NAME',
  localEventsDir: 'SENDPROOF_LOCAL_EVENTS_DIR',
  localEventEndpoints: 'SENDPROOF_LOCAL_EVENT_ENDPOINTS',
  rateLimits: 'SENDPROOF_RATE_LIMITS',
  templatesDir: 'SENDPROOF_TEMPLATES_DIR',
  leaseSeconds: 'SENDPROOF_LEASE_SECONDS',
  attentionShards: 'SENDPROOF_ATTENTION_SHARDS',
  recordConcurrency: 'SENDPROOF_RECORD_CONCURRENCY',
  endpointDynamoDb: 'SENDPROOF_ENDPOINT_DYNAMODB',
  endpointSqs: 'SENDPROOF_ENDPOINT_SQS',
  endpointS3: 'SENDPROOF_ENDPOINT_S3',
  endpointSes: 'SENDPROOF_ENDPOINT_SES',
  endpointSmsV2: 'SENDPROOF_ENDPOINT_SMS_V2',
  endpointEventBridge: 'SENDPROOF_ENDPOINT_EVENTBRIDGE',
  endpointAthena: 'SENDPROOF_ENDPOINT_ATHENA',
  region: 'AWS_REGION',
} as const;

// Settings of one shape share one schema instance (schemas are immutable; an issue's path is the key's),
// built with the config schema, on its first use.
const fieldSchemas = lazySchema('configFields', () => ({
  optionalUrl: z.optional(z.url()),
  optionalString: z.optional(z.string()),
  optionalArn: z.optional(z.string().check(z.startsWith('arn:'))),
  /** A table or bucket name. */
  optionalResourceName: z.optional(z.string().check(z.minLength(3))),
  optionalNonEmpty: z.optional(z.string().check(z.minLength(1))),
  optionalPort: z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(65_535))),
}));

/**
 * A custom issue from a transform, as classic zod's `ctx.addIssue({ code: 'custom', message })` made it
 * (zod/mini's transform context has no `addIssue`: the issue is pushed onto the payload, which is all
 * classic's helper did). The object schema prefixes the setting's name as the issue's path.
 */
const addIssue = (ctx: z.core.ParsePayload, message: string): void => {
  ctx.issues.push({ code: 'custom', message, input: ctx.value });
};

export { EMAIL_TRANSPORTS, SMS_TRANSPORTS };

/**
 * An ordered provider list (`ses,sendgrid`): the first is the channel's primary, each next one is where a
 * row goes on a definite non-acceptance (lib/dispatch/providers.ts). Comma-separated or a JSON array; no
 * name twice; `simulator` and `rest` share one base URL, so at most one of them.
 */
const providerList = <T extends string>(names: readonly [T, ...T[]]) =>
  z.pipe(
    fieldSchemas().optionalString,
    z.transform((raw, ctx) => {
      if (raw === undefined) return undefined;
      const trimmed = raw.trim();
      let items: unknown;
      try {
        items = trimmed.startsWith('[') ? JSON.parse(trimmed) : trimmed.split(',').map((s) => s.trim());
      } catch {
        items = undefined;
      }
      const parsed = z.array(z.enum(names)).check(z.minLength(1), z.maxLength(4)).safeParse(items);
      if (!parsed.success) {
        addIssue(ctx, `must list providers among ${names.join(', ')}`);
        return z.NEVER;
      }
      const list = parsed.data;
      if (new Set(list).size !== list.length) addIssue(ctx, 'names a provider twice');
      if (list.includes('rest' as T) && list.includes('simulator' as T))
        addIssue(ctx, 'rest and simulator share one base URL: list one of them');
      return list;
    }),
  );

/**
 * The provider circuit (lib/transports/health.ts), per provider, shared by every execution environment:
 * `failures` 5xx / never-left answers within `windowSeconds` open it; after `openSeconds` one dispatcher
 * sends a probe (half-open), and its success closes it. `cacheMs`: how long a dispatcher trusts the
 * circuit it read (one read per provider per interval, not per send). `providerCircuitFields()` are the
 * fields (each optional in a CDK prop or context value, infra/appConfig.ts); `providerCircuitSchema()` adds
 * the check across them.
 */
export const providerCircuitFields = lazySchema('providerCircuitFields', () =>
  z.strictObject({
    failures: z._default(z.number().check(z.int(), z.gte(1), z.lte(1000)), 5),
    windowSeconds: z._default(z.number().check(z.int(), z.gte(1), z.lte(3600)), 60),
    openSeconds: z._default(z.number().check(z.int(), z.gte(1), z.lte(3600)), 60),
    cacheMs: z._default(z.number().check(z.int(), z.gte(0), z.lte(60_000)), 1000),
    /**
     * Slow delivery reports (lib/transports/reportLag.ts): a report that reaches the ledger more than
     * `reportLagSeconds` after the provider accepted the message is late. The reconcile run looks at the
     * messages accepted within the last `reportWindowSeconds` whose lag has passed; when at least
     * `reportMinSample` of them were accepted and a share of at least `reportLateShare` has no report in
     * time, the provider's circuit opens (`slow_reports:<late>/<accepted>/<window>s`).
     */
    reportLagSeconds: z._default(z.number().check(z.int(), z.gte(60), z.lte(86_400)), 600),
    reportWindowSeconds: z._default(z.number().check(z.int(), z.gte(120), z.lte(86_400)), 1800),
    reportMinSample: z._default(z.number().check(z.int(), z.gte(1), z.lte(1_000_000)), 20),
    reportLateShare: z._default(z.number().check(z.gt(0), z.lte(1)), 0.5),
  }),
);
export const providerCircuitSchema = lazySchema('providerCircuit', () =>
  providerCircuitFields().check(
    z.refine((s) => s.reportWindowSeconds > s.reportLagSeconds, {
      message: 'reportWindowSeconds must be longer than reportLagSeconds (else no minute is ever judged)',
      path: ['reportWindowSeconds'],
    }),
  ),
);
export type ProviderCircuitSettings = z.output<ReturnType<typeof providerCircuitSchema>>;
/** `providerCircuitSchema().parse({})`, written out (lib/configFastPath.ts) so an unset circuit builds no schema. */
export const PROVIDER_CIRCUIT_DEFAULTS: Readonly<ProviderCircuitSettings> = CIRCUIT_DEFAULTS;

/**
 * Every setting's schema, built on first use: `loadConfig` reads a usual environment through the zod-free
 * `fastConfig` (lib/configFastPath.ts) and builds this only for what that declines (an unusual or invalid
 * value, a JSON setting), so a cold start builds no config schema (test/unit/configFastPath.test.ts
 * holds the two to the same output).
 */
export const configSchema = lazySchema('config', () => {
  const { optionalUrl, optionalString, optionalArn, optionalResourceName, optionalNonEmpty, optionalPort } =
    fieldSchemas();
  return z.object({
    ledgerTable: optionalResourceName,
    suppressionTable: optionalResourceName,
    archiveBucket: optionalResourceName,
    archiveMirrorDir: optionalString,
    /** Object Lock days for a purpose that names no `archiveRetentionDays` (the bucket default). */
    archiveRetentionDays: z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(36_500))),
    /** The archiver's on-failure destination (SQS): batches given up after the retries, for the backfill. */
    archiveFailuresUrl: optionalUrl,
    /** KMS asymmetric key (RSA, SIGN_VERIFY) that signs the archive digests. */
    digestKeyId: optionalNonEmpty,
    queueUrl: optionalUrl,
    dlqUrl: optionalUrl,
    /** Local/dev only; in AWS the key comes from Secrets Manager (contentHashSecretArn). */
    contentHashKey: z.optional(z.string().check(z.minLength(16))),
    contentHashSecretArn: optionalArn,
    emailTransport: z._default(z.enum(EMAIL_TRANSPORTS), 'ses'),
    smsTransport: z._default(z.enum(SMS_TRANSPORTS), 'simulator'),
    /** Ordered email providers (failover); absent: `emailTransport` alone. Its first entry is the primary. */
    emailProviders: providerList(EMAIL_TRANSPORTS),
    /** Ordered SMS providers (failover); absent: `smsTransport` alone. */
    smsProviders: providerList(SMS_TRANSPORTS),
    /** Provider circuit settings (JSON, `providerCircuitSchema()`); absent: PROVIDER_CIRCUIT_DEFAULTS. */
    providerCircuit: z.pipe(
      optionalString,
      z.transform((raw, ctx) => {
        if (!raw) return { ...PROVIDER_CIRCUIT_DEFAULTS };
        let value: unknown;
        try {
          value = JSON.parse(raw);
        } catch {
          addIssue(ctx, 'must be JSON');
          return z.NEVER;
        }
        const parsed = providerCircuitSchema().safeParse(value);
        if (parsed.success) return parsed.data;
        addIssue(
          ctx,
          parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '),
        );
        return z.NEVER;
      }),
    ),
    emailFrom: z._default(z.string().check(z.minLength(3)), 'no-reply@sendproof.local'),
    sesConfigurationSet: optionalString,
    smsOriginationIdentity: optionalString,
    smsConfigurationSet: optionalString,
    restBaseUrl: optionalUrl,
    /**
     * How long the REST provider (and the simulator) remembers an Idempotency-Key. The replay window is
     * measured against it, so it must be the provider's documented figure, never a guess: too long would
     * replay after the provider forgot the key, which is a second send. At least 2 minutes (the replay
     * margin is one), at most 30 days. Default 24 h.
     */
    restKeyRetentionSeconds: z._default(
      z.coerce.number().check(z.int(), z.gte(120), z.lte(30 * 86_400)),
      86_400,
    ),
    providerSecretArn: optionalArn,
    /** KMS key that seals parked intents (AWS Encryption SDK). */
    sealKeyArn: optionalArn,
    /** Local/dev only: a base64 32-byte AES key for the raw AES keyring. */
    sealLocalKey: z.optional(
      z
        .string()
        .check(z.refine((v) => Buffer.from(v, 'base64').byteLength === 32, 'must be 32 bytes, base64')),
    ),
    /** The intake queue's maxReceiveCount: the dispatcher seals on the last receive. */
    maxReceiveCount: z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(1000))),
    /** How long after a parked message's due time the sweep looks (the queue message normally comes first). */
    parkGraceSeconds: z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(43_200))),
    /** Webhook signing secrets (JSON `{ resend?, twilio?, sendgrid? }`) in Secrets Manager. */
    webhookSecretArn: optionalArn,
    /** Local/dev only: the same JSON inline (the local stack's generated test secrets). */
    webhookSecrets: optionalString,
    /** The evidence endpoint's Twilio path; the key hash is added as `?k=`. */
    twilioStatusCallbackUrl: optionalUrl,
    /** Local stack only: the port the functions worker serves the evidence endpoint on. */
    localWebhookPort: optionalPort,
    /** Console in AWS: the archive's Athena workgroup and Glue database for the named audit queries. */
    athenaWorkGroup: optionalNonEmpty,
    athenaDatabase: optionalNonEmpty,
    /** Local stack only: the port of the SES event emitter (lib/local/SesEventEmitter.ts) in front of the inbox. */
    localSesEmitterPort: optionalPort,
    /** Local stack only: aws-ses-v2-local's URL, behind the emitter. */
    localSesUpstream: optionalUrl,
    /** The EventBridge bus outcome events are published to (functions/outcomes). */
    eventBusName: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
    /** Local stack only: the local event bus's folder (outcomes.jsonl, dead-letter.jsonl). */
    localEventsDir: optionalString,
    /**
     * Local stack only: caller endpoints the local bus POSTs every event to, as an API destination would:
     * JSON `[{ "url": "http://127.0.0.1:9000/hook", "tenant": "acme-games" }]` (tenant optional: all).
     */
    localEventEndpoints: z.pipe(
      optionalString,
      z.transform((raw, ctx) => {
        if (!raw) return [] as Array<{ url: string; tenant?: string }>;
        let value: unknown;
        try {
          value = JSON.parse(raw);
        } catch {
          value = undefined;
        }
        const parsed = z
          .array(z.strictObject({ url: z.url(), tenant: z.optional(z.string().check(z.minLength(1))) }))
          .safeParse(value);
        if (parsed.success) return parsed.data;
        addIssue(ctx, 'must be a JSON array of { url, tenant? }');
        return z.NEVER;
      }),
    ),
    purposes: z.pipe(
      optionalString,
      z.transform((raw, ctx) => {
        if (!raw) return [] as unknown[];
        try {
          const value = JSON.parse(raw) as unknown;
          if (!Array.isArray(value)) throw new ConfigurationError('SENDPROOF_PURPOSES is not a JSON array');
          return value as unknown[];
        } catch {
          addIssue(ctx, 'must be a JSON array of purpose policies');
          return z.NEVER;
        }
      }),
    ),
    /** Send pace per transport and quota per tenant (JSON, lib/rate/settings.ts). Absent: no pacing. */
    rateLimits: z.pipe(
      optionalString,
      z.transform((raw, ctx) => {
        if (!raw) return undefined;
        try {
          const parsed = rateSettingsSchema().safeParse(JSON.parse(raw));
          if (parsed.success) return parsed.data;
          addIssue(
            ctx,
            parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '),
          );
        } catch {
          addIssue(ctx, 'must be JSON');
        }
        return z.NEVER;
      }),
    ),
    templatesDir: optionalString,
    leaseSeconds: z._default(z.coerce.number().check(z.int(), z.gte(5), z.lte(900)), 90),
    recordConcurrency: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(50)), 5),
    /**
     * Shards of the attention index's partition key (lib/ledger/attentionIndex.ts). Every function and the
     * CLI must use the same figure for one table; it may grow, never shrink.
     */
    attentionShards: z._default(
      z.coerce.number().check(z.int(), z.gte(1), z.lte(ATTENTION_SHARDS.max)),
      ATTENTION_SHARDS.default,
    ),
    endpointDynamoDb: optionalUrl,
    endpointSqs: optionalUrl,
    endpointS3: optionalUrl,
    endpointSes: optionalUrl,
    endpointSmsV2: optionalUrl,
    endpointEventBridge: optionalUrl,
    endpointAthena: optionalUrl,
    region: z._default(z.string(), 'us-east-1'),
  });
});
export type ConfigOutput = z.output<ReturnType<typeof configSchema>>;
// The fast path has a rule for every setting (the unit test checks the order and that none is extra).
FAST_RULES satisfies Record<keyof ConfigOutput, unknown>;
export type Config = ConfigOutput & {
  /**
   * The Lambda function this configuration is for, set by `functionConfig` (never read from the
   * environment). lib/aws attributes the clients built from it to that function (the command recorder).
   */
  readonly functionName?: FunctionName;
};

/**
 * The ordered providers of a channel: the configured list, else the single transport. When both are set,
 * the list wins and `emailTransport` / `smsTransport` name its first entry (kept for the readers of one).
 */
export const providersOf = <C extends 'email' | 'sms'>(
  config: Pick<Config, 'emailTransport' | 'smsTransport' | 'emailProviders' | 'smsProviders'>,
  channel: C,
): C extends 'email' ? Config['emailTransport'][] : Config['smsTransport'][] =>
  (channel === 'email'
    ? (config.emailProviders ?? [config.emailTransport])
    : (config.smsProviders ?? [config.smsTransport])) as never;

/** Whether a channel has a provider to fail over to (then provider circuits are kept and read). */
export const failsOver = (config: Pick<Config, 'emailProviders' | 'smsProviders'>): boolean =>
  (config.emailProviders?.length ?? 0) > 1 || (config.smsProviders?.length ?? 0) > 1;

/** The settings an environment sets, by setting name (an empty variable is unset). */
export const settingsFromEnv = (env: Readonly<Record<string, string | undefined>>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(ENV)
      .map(([key, name]) => [key, env[name] === '' ? undefined : env[name]])
      .filter((entry): entry is [string, string] => entry[1] !== undefined),
  );

export const loadConfig = (env: Readonly<Record<string, string | undefined>> = process.env): Config => {
  const raw = settingsFromEnv(env);
  const data = (fastConfig(raw) as ConfigOutput | undefined) ?? parseSlowly(raw);
  return {
    ...data,
    ...(data.emailProviders ? { emailTransport: data.emailProviders[0]! } : {}),
    ...(data.smsProviders ? { smsTransport: data.smsProviders[0]! } : {}),
  };
};

/** The schema's parse: what the fast path declines, and every invalid configuration's error. */
const parseSlowly = (raw: Record<string, string>): ConfigOutput => {
  const parsed = configSchema().safeParse(raw);
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
  reconcile: ['ledgerTable', 'suppressionTable', 'queueUrl'],
  evidence: ['ledgerTable', 'suppressionTable'],
  webhook: ['ledgerTable', 'suppressionTable'],
  archive: ['archiveBucket'],
  archiveMaintenance: ['archiveBucket', 'ledgerTable', 'archiveFailuresUrl', 'digestKeyId'],
  console: ['ledgerTable'],
  outcomes: ['eventBusName'],
  sloAudit: ['athenaWorkGroup', 'athenaDatabase', 'archiveBucket'],
} as const satisfies Record<string, ReadonlyArray<keyof Config>>;

export type FunctionName = keyof typeof FUNCTION_SETTINGS;

/**
 * A Lambda entry's configuration: the environment parsed, the settings the function needs checked, and
 * the function named (`functionName`), so every client built from it is known to be that function's.
 */
export const functionConfig = <N extends FunctionName>(
  name: N,
  env: Readonly<Record<string, string | undefined>> = process.env,
) => ({
  ...requireSettings(loadConfig(env), FUNCTION_SETTINGS[name]),
  functionName: name,
});

export const requireSettings = <K extends keyof Config>(
  config: Config,
  keys: readonly K[],
): Config & { [P in K]-?: NonNullable<Config[P]> } => {
  const missing = keys.filter((key) => config[key] === undefined).map((key) => ENV[key as keyof typeof ENV]);
  if (missing.length > 0) throw new ConfigurationError(`missing configuration: ${missing.join(', ')}`);
  return config as Config & { [P in K]-?: NonNullable<Config[P]> };
};
