import { ATTENTION_SHARDS } from './ledger/attentionIndex.js';
import { EMAIL_TRANSPORTS as EMAIL, SMS_TRANSPORTS as SMS } from './transportNames.js';

/**
 * The configuration's fast path: the environment a function is deployed with, read without zod.
 *
 * `configSchema()` (lib/config.ts) stays the one definition of every setting. Building it and parsing
 * with it cost about 6 ms of every cold start (zod builds some 200 schema nodes, and its first parse
 * compiles a parser), for an environment that is the same on every start. This reads each setting by the
 * same rule the schema applies, and returns `undefined` — so `loadConfig` asks the schema — for anything
 * it does not accept outright: an invalid value (whose error only the schema words), a value the schema
 * would rewrite (a padded number, a URL with spaces) and the JSON settings it leaves to the schema
 * (provider circuit, rate limits, local event endpoints). What it does return is what the schema would
 * have returned, key for key and in the schema's order: test/unit/configFastPath.test.ts checks that
 * over generated environments and the deployed ones, and that both list the same settings.
 */
type Rule =
  | { kind: 'string'; min?: number; max?: number; prefix?: string; fallback?: string }
  | { kind: 'url' }
  | { kind: 'int'; min: number; max: number; fallback?: number }
  | { kind: 'enum'; values: readonly string[]; fallback: string }
  | { kind: 'providers'; values: readonly string[] }
  | { kind: 'sealKey' }
  | { kind: 'jsonArray' }
  /** A JSON setting the schema parses: fast only when absent, with the schema's value for absent. */
  | { kind: 'schemaOnly'; absent: () => unknown };

/**
 * `providerCircuitSchema().parse({})` (lib/config.ts), written out so an unset circuit builds no schema;
 * the test holds the two equal.
 */
export const PROVIDER_CIRCUIT_DEFAULTS = Object.freeze({
  failures: 5,
  windowSeconds: 60,
  openSeconds: 60,
  cacheMs: 1000,
  reportLagSeconds: 600,
  reportWindowSeconds: 1800,
  reportMinSample: 20,
  reportLateShare: 0.5,
});

const resourceName: Rule = { kind: 'string', min: 3 };
const text: Rule = { kind: 'string' };
const nonEmpty: Rule = { kind: 'string', min: 1 };
const arn: Rule = { kind: 'string', prefix: 'arn:' };
const url: Rule = { kind: 'url' };
const port: Rule = { kind: 'int', min: 1, max: 65_535 };

/** In configSchema()'s key order (the test fails if a setting is missing, extra or out of place). */
export const FAST_RULES = {
  ledgerTable: resourceName,
  suppressionTable: resourceName,
  archiveBucket: resourceName,
  archiveMirrorDir: text,
  archiveRetentionDays: { kind: 'int', min: 1, max: 36_500 },
  archiveFailuresUrl: url,
  digestKeyId: nonEmpty,
  queueUrl: url,
  dlqUrl: url,
  contentHashKey: { kind: 'string', min: 16 },
  contentHashSecretArn: arn,
  emailTransport: { kind: 'enum', values: EMAIL, fallback: 'ses' },
  smsTransport: { kind: 'enum', values: SMS, fallback: 'simulator' },
  emailProviders: { kind: 'providers', values: EMAIL },
  smsProviders: { kind: 'providers', values: SMS },
  providerCircuit: { kind: 'schemaOnly', absent: () => ({ ...PROVIDER_CIRCUIT_DEFAULTS }) },
  emailFrom: { kind: 'string', min: 3, fallback: 'no-reply@sendproof.local' },
  sesConfigurationSet: text,
  smsOriginationIdentity: text,
  smsConfigurationSet: text,
  restBaseUrl: url,
  restKeyRetentionSeconds: { kind: 'int', min: 120, max: 30 * 86_400, fallback: 86_400 },
  providerSecretArn: arn,
  sealKeyArn: arn,
  sealLocalKey: { kind: 'sealKey' },
  maxReceiveCount: { kind: 'int', min: 1, max: 1000 },
  parkGraceSeconds: { kind: 'int', min: 1, max: 43_200 },
  webhookSecretArn: arn,
  webhookSecrets: text,
  twilioStatusCallbackUrl: url,
  localWebhookPort: port,
  athenaWorkGroup: nonEmpty,
  athenaDatabase: nonEmpty,
  localSesEmitterPort: port,
  localSesUpstream: url,
  eventBusName: { kind: 'string', min: 1, max: 256 },
  localEventsDir: text,
  localEventEndpoints: { kind: 'schemaOnly', absent: () => [] },
  purposes: { kind: 'jsonArray' },
  rateLimits: { kind: 'schemaOnly', absent: () => undefined },
  templatesDir: text,
  leaseSeconds: { kind: 'int', min: 5, max: 900, fallback: 90 },
  recordConcurrency: { kind: 'int', min: 1, max: 50, fallback: 5 },
  attentionShards: { kind: 'int', min: 1, max: ATTENTION_SHARDS.max, fallback: ATTENTION_SHARDS.default },
  endpointDynamoDb: url,
  endpointSqs: url,
  endpointS3: url,
  endpointSes: url,
  endpointSmsV2: url,
  endpointEventBridge: url,
  endpointAthena: url,
  region: { kind: 'string', fallback: 'us-east-1' },
} satisfies Record<string, Rule>;

const DECLINE = Symbol('decline');
/** Digits only, no sign, no leading zero, no padding: `Number` reads these exactly as written. */
const PLAIN_INTEGER = /^(0|[1-9][0-9]{0,14})$/;
const TAB_OR_NEWLINE = /[\t\n\r]/;

const read = (rule: Rule, raw: string | undefined): unknown => {
  if (raw === undefined) {
    if (rule.kind === 'schemaOnly') return rule.absent();
    if (rule.kind === 'jsonArray') return [];
    return 'fallback' in rule ? rule.fallback : undefined;
  }
  switch (rule.kind) {
    case 'string':
      if (rule.min !== undefined && raw.length < rule.min) return DECLINE;
      if (rule.max !== undefined && raw.length > rule.max) return DECLINE;
      if (rule.prefix !== undefined && !raw.startsWith(rule.prefix)) return DECLINE;
      return raw;
    case 'url':
      // z.url() keeps the trimmed value with tabs and newlines removed: only a value it keeps as is.
      return raw.trim() === raw && !TAB_OR_NEWLINE.test(raw) && URL.canParse(raw) ? raw : DECLINE;
    case 'int': {
      if (!PLAIN_INTEGER.test(raw)) return DECLINE;
      const value = Number(raw);
      return value >= rule.min && value <= rule.max ? value : DECLINE;
    }
    case 'enum':
      return rule.values.includes(raw) ? raw : DECLINE;
    case 'providers': {
      const trimmed = raw.trim();
      let items: unknown;
      try {
        items = trimmed.startsWith('[') ? JSON.parse(trimmed) : trimmed.split(',').map((s) => s.trim());
      } catch {
        return DECLINE;
      }
      if (!Array.isArray(items) || items.length < 1 || items.length > 4) return DECLINE;
      if (!items.every((item) => typeof item === 'string' && rule.values.includes(item))) return DECLINE;
      if (new Set(items).size !== items.length) return DECLINE;
      if (items.includes('rest') && items.includes('simulator')) return DECLINE;
      return items;
    }
    case 'sealKey':
      return Buffer.from(raw, 'base64').byteLength === 32 ? raw : DECLINE;
    case 'jsonArray': {
      try {
        const value = JSON.parse(raw) as unknown;
        return Array.isArray(value) ? value : DECLINE;
      } catch {
        return DECLINE;
      }
    }
    case 'schemaOnly':
      return DECLINE;
  }
};

/**
 * The settings as `configSchema()` would return them, or `undefined` when only the schema can say. Typed
 * by lib/config.ts, which imports this (this module imports nothing of it: no import cycle).
 */
export const fastConfig = (
  raw: Readonly<Record<string, string | undefined>>,
): Record<string, unknown> | undefined => {
  const out: Record<string, unknown> = {};
  for (const key in FAST_RULES) {
    const value = read(FAST_RULES[key as keyof typeof FAST_RULES], raw[key]);
    if (value === DECLINE) return undefined;
    if (value !== undefined) out[key] = value;
  }
  return out;
};
