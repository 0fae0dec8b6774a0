import { Duration, type Environment } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import * as z from 'zod/mini';
import '../lib/domain/zodLocale.js';
import { providerCircuitFields } from '../lib/config.js';
import { purposePolicySchema } from '../lib/domain/purposes.js';
import type { NotificationLedgerProps } from './NotificationLedger.js';

/** Context keys the app reads (cdk.json "context", or `-c sendproof:key=value`). */
export const CONTEXT = {
  stackName: 'sendproof:stackName',
  account: 'sendproof:account',
  region: 'sendproof:region',
  email: 'sendproof:email',
  sms: 'sendproof:sms',
  providerSecretArn: 'sendproof:providerSecretArn',
  restBaseUrl: 'sendproof:restBaseUrl',
  restKeyRetentionSeconds: 'sendproof:restKeyRetentionSeconds',
  purposes: 'sendproof:purposes',
  archiveRetentionDays: 'sendproof:archiveRetentionDays',
  alarmTopicArn: 'sendproof:alarmTopicArn',
  reconcileSchedule: 'sendproof:reconcileSchedule',
  reconcileMaxPagesPerRun: 'sendproof:reconcileMaxPagesPerRun',
  dispatcherMaxConcurrency: 'sendproof:dispatcherMaxConcurrency',
  recordConcurrency: 'sendproof:recordConcurrency',
  leaseSeconds: 'sendproof:leaseSeconds',
  attentionShards: 'sendproof:attentionShards',
  attachmentsBucket: 'sendproof:attachmentsBucket',
  attachmentsPrefix: 'sendproof:attachmentsPrefix',
  providerCircuit: 'sendproof:providerCircuit',
  tracing: 'sendproof:tracing',
} as const;

/** `-c key=value` arrives as a string; cdk.json values arrive typed. Accept both. */
const jsonish = <T extends z.core.$ZodType>(schema: T) =>
  z.pipe(
    z.transform((value: unknown): unknown => {
      if (typeof value !== 'string') return value;
      try {
        return JSON.parse(value);
      } catch {
        return value;
      }
    }),
    schema,
  );

const ContextSchema = z.object({
  stackName: z._default(z.string().check(z.regex(/^[A-Za-z][A-Za-z0-9-]{0,127}$/)), 'Sendproof'),
  account: z.optional(z.string().check(z.regex(/^\d{12}$/))),
  region: z.optional(z.string()),
  email: z._default(
    jsonish(
      z.strictObject({
        transport: z.enum(['ses', 'resend', 'sendgrid', 'rest', 'simulator']),
        /** Providers to fail over to, in order, after `transport` (issue 29). */
        failover: z.optional(z.array(z.enum(['ses', 'resend', 'sendgrid', 'rest', 'simulator']))),
        fromAddress: z.string().check(z.minLength(3)),
        sesIdentity: z.optional(z.string()),
        sesConfigurationSetName: z.optional(z.string()),
      }),
    ),
    { transport: 'simulator', fromAddress: 'no-reply@sendproof.local' },
  ),
  sms: z._default(
    jsonish(
      z.strictObject({
        transport: z.enum(['sms-v2', 'twilio', 'rest', 'simulator']),
        failover: z.optional(z.array(z.enum(['sms-v2', 'twilio', 'rest', 'simulator']))),
        originationIdentityArn: z.optional(z.string().check(z.startsWith('arn:'))),
        senderId: z.optional(
          z.string().check(z.regex(/^(\+[1-9]\d{6,14}|MG[0-9a-f]{32})$/, 'a Twilio E.164 number or MG… SID')),
        ),
      }),
    ),
    { transport: 'simulator' },
  ),
  providerSecretArn: z.optional(z.string().check(z.startsWith('arn:'))),
  restBaseUrl: z.optional(z.url()),
  restKeyRetentionSeconds: z.optional(z.coerce.number().check(z.int())),
  purposes: z.optional(jsonish(z.array(purposePolicySchema()))),
  archiveRetentionDays: z.optional(z.coerce.number().check(z.int(), z.minimum(1))),
  alarmTopicArn: z.optional(z.string().check(z.startsWith('arn:'))),
  reconcileSchedule: z.optional(z.string()),
  reconcileMaxPagesPerRun: z.optional(z.coerce.number().check(z.int(), z.minimum(1))),
  dispatcherMaxConcurrency: z.optional(z.coerce.number().check(z.int())),
  recordConcurrency: z.optional(z.coerce.number().check(z.int())),
  leaseSeconds: z.optional(z.coerce.number().check(z.int())),
  attentionShards: z.optional(z.coerce.number().check(z.int())),
  attachmentsBucket: z.optional(z.string()),
  attachmentsPrefix: z.optional(z.string()),
  providerCircuit: z.optional(jsonish(z.partial(providerCircuitFields()))),
  tracing: z._default(jsonish(z.boolean()), true),
});

export interface AppConfig {
  stackName: string;
  env?: Environment;
  /** Built inside the stack, because imported topics/secrets/buckets need a scope. */
  ledger: (scope: Construct) => NotificationLedgerProps;
}

/** Parses the app's context once; an invalid value fails synth with the key that is wrong. */
export const appConfigFromContext = (read: (key: string) => unknown): AppConfig => {
  const raw = Object.fromEntries(
    Object.entries(CONTEXT)
      .map(([field, key]) => [field, read(key)])
      .filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = ContextSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const field = String(issue.path[0] ?? '') as keyof typeof CONTEXT;
      return `${CONTEXT[field] ?? field}: ${issue.message}`;
    });
    throw new Error(`invalid Sendproof context: ${problems.join('; ')}`);
  }
  const c = parsed.data;
  return {
    stackName: c.stackName,
    ...(c.account || c.region ? { env: { account: c.account, region: c.region } } : {}),
    ledger: (scope) => ({
      email: c.email,
      sms: c.sms,
      providerSecret: c.providerSecretArn
        ? secretsmanager.Secret.fromSecretCompleteArn(scope, 'ProviderSecret', c.providerSecretArn)
        : undefined,
      restBaseUrl: c.restBaseUrl,
      restKeyRetentionSeconds: c.restKeyRetentionSeconds,
      purposes: c.purposes,
      archiveRetentionDays: c.archiveRetentionDays,
      alarmTopic: c.alarmTopicArn ? sns.Topic.fromTopicArn(scope, 'AlarmTopic', c.alarmTopicArn) : undefined,
      reconcileSchedule: c.reconcileSchedule
        ? scheduler.ScheduleExpression.expression(c.reconcileSchedule)
        : scheduler.ScheduleExpression.rate(Duration.minutes(5)),
      reconcileMaxPagesPerRun: c.reconcileMaxPagesPerRun,
      concurrency: {
        dispatcherMaxConcurrency: c.dispatcherMaxConcurrency,
        recordConcurrency: c.recordConcurrency,
      },
      leaseSeconds: c.leaseSeconds,
      attentionShards: c.attentionShards,
      providerCircuit: c.providerCircuit,
      tracing: c.tracing,
      attachments: c.attachmentsBucket
        ? {
            bucket: s3.Bucket.fromBucketName(scope, 'AttachmentsBucket', c.attachmentsBucket),
            prefix: c.attachmentsPrefix ?? '',
          }
        : undefined,
    }),
  };
};
