import { Duration, type Environment } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import * as z from 'zod';
import { ProviderCircuitFields } from '../lib/config.js';
import { PurposePolicySchema } from '../lib/domain/purposes.js';
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
const jsonish = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }, schema);

const ContextSchema = z.object({
  stackName: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{0,127}$/)
    .default('Sendproof'),
  account: z
    .string()
    .regex(/^\d{12}$/)
    .optional(),
  region: z.string().optional(),
  email: jsonish(
    z.strictObject({
      transport: z.enum(['ses', 'resend', 'sendgrid', 'rest', 'simulator']),
      /** Providers to fail over to, in order, after `transport` (issue 29). */
      failover: z.array(z.enum(['ses', 'resend', 'sendgrid', 'rest', 'simulator'])).optional(),
      fromAddress: z.string().min(3),
      sesIdentity: z.string().optional(),
      sesConfigurationSetName: z.string().optional(),
    }),
  ).default({ transport: 'simulator', fromAddress: 'no-reply@sendproof.local' }),
  sms: jsonish(
    z.strictObject({
      transport: z.enum(['sms-v2', 'twilio', 'rest', 'simulator']),
      failover: z.array(z.enum(['sms-v2', 'twilio', 'rest', 'simulator'])).optional(),
      originationIdentityArn: z.string().startsWith('arn:').optional(),
      senderId: z
        .string()
        .regex(/^(\+[1-9]\d{6,14}|MG[0-9a-f]{32})$/, 'a Twilio E.164 number or MG… SID')
        .optional(),
    }),
  ).default({ transport: 'simulator' }),
  providerSecretArn: z.string().startsWith('arn:').optional(),
  restBaseUrl: z.url().optional(),
  restKeyRetentionSeconds: z.coerce.number().int().optional(),
  purposes: jsonish(z.array(PurposePolicySchema)).optional(),
  archiveRetentionDays: z.coerce.number().int().min(1).optional(),
  alarmTopicArn: z.string().startsWith('arn:').optional(),
  reconcileSchedule: z.string().optional(),
  reconcileMaxPagesPerRun: z.coerce.number().int().min(1).optional(),
  dispatcherMaxConcurrency: z.coerce.number().int().optional(),
  recordConcurrency: z.coerce.number().int().optional(),
  leaseSeconds: z.coerce.number().int().optional(),
  attentionShards: z.coerce.number().int().optional(),
  attachmentsBucket: z.string().optional(),
  attachmentsPrefix: z.string().optional(),
  providerCircuit: jsonish(z.strictObject(ProviderCircuitFields.shape).partial()).optional(),
  tracing: jsonish(z.boolean()).default(true),
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
