import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { INTAKE_QUEUE } from '../lib/queueDefinition.js';

/**
 * The traffic a capacity question is asked about (`npm run capacity -- --mix <file>`): which purposes and
 * channels, how often the provider makes a notification leave the happy path, how the tenants share it,
 * and, optionally, the deployment's settings where they differ from the CDK defaults. JSON, validated
 * here; a bad file is refused with every problem named by its path.
 */

const share = z.number().min(0).max(1);
const SUM_TOLERANCE = 1e-6;
const sumsToOne = (shares: Record<string, number>) =>
  Math.abs(Object.values(shares).reduce((a, b) => a + b, 0) - 1) <= SUM_TOLERANCE;

/** A record keyed by country: each key an upper-case ISO 3166-1 alpha-2 code, named when it is not. */
const byCountry = <T extends z.ZodType>(value: T) =>
  z.record(z.string(), value).superRefine((record, ctx) => {
    for (const key of Object.keys(record))
      if (!/^[A-Z]{2}$/.test(key))
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'not an upper-case ISO 3166-1 alpha-2 country code',
        });
  });

const ChannelSharesSchema = z
  .strictObject({ email: share.optional(), sms: share.optional() })
  .refine((c) => sumsToOne({ email: c.email ?? 0, sms: c.sms ?? 0 }), {
    message: 'channel shares of a purpose must add up to 1',
  });

export const PurposeMixSchema = z.strictObject({
  /** A purpose name (built-in or the deployment's own). */
  purpose: z.string().min(1).max(64),
  /** Share of all notifications. */
  share,
  channels: ChannelSharesSchema,
  /** The purpose declares `cancellable` (a strongly consistent cancel-marker read per attempt). */
  cancellable: z.boolean().default(false),
  /** The purpose's SMS go through a spend breaker (one counter item per purpose and country). */
  smsSpendBreaker: z.boolean().default(false),
});

const LambdaSchema = z.strictObject({
  /** SQS event source batch size (records per dispatcher invocation). */
  batchSize: z.number().int().min(1).max(10_000).default(INTAKE_QUEUE.batchSize),
  /** Records one invocation runs at once (SENDPROOF_RECORD_CONCURRENCY). */
  recordConcurrency: z.number().int().min(1).max(50).default(5),
  /** The event source's concurrent batches when the queue is not backed up (Lambda starts at five). */
  pollers: z.number().int().min(1).max(1_000).default(5),
  /** A poller's receive and delete round trips, per batch (ms). */
  pollOverheadMs: z.number().min(0).max(10_000).default(20),
  dispatcherMemoryMb: z.number().int().min(128).max(10_240).default(512),
  evidenceMemoryMb: z.number().int().min(128).max(10_240).default(256),
  reconcileMemoryMb: z.number().int().min(128).max(10_240).default(512),
  /** Measured dispatch time per record is taken from the benchmark unless given here (ms). */
  dispatchMs: z.number().positive().max(60_000).optional(),
  /** Evidence function time per event (ms). */
  evidenceMs: z.number().positive().max(60_000).default(50),
  /** The account's concurrent executions quota (default 1,000 per Region). */
  accountConcurrency: z.number().int().min(1).default(1_000),
  /** The SQS event source's maximum concurrency (`dispatcherMaxConcurrency`; the event source's own cap is 1,000). */
  dispatcherMaxConcurrency: z.number().int().min(2).max(1_000).default(1_000),
});

export const DeploymentSchema = z.strictObject({
  lambda: LambdaSchema.default(() => LambdaSchema.parse({})),
  /** Records the publisher puts in one SendMessageBatch. */
  publishBatchSize: z.number().int().min(1).max(10).default(10),
  /** SENDPROOF_ATTENTION_SHARDS / CDK `attentionShards`. */
  attentionShards: z.number().int().min(1).max(64).default(4),
  reconcile: z
    .strictObject({
      periodSeconds: z.number().positive().max(86_400).default(300),
      maxPagesPerRun: z.number().int().min(1).max(1_000).default(50),
      pageSize: z.number().int().min(1).max(1_000).default(25),
      /**
       * Reconcile runs an `unknown` row waits before anything settles it, beyond what the benchmark's
       * provider showed (its REST convention replays under the key at once). For SES or SMS without a
       * lookup, about the purpose's ambiguity deadline ÷ the period.
       */
      unknownWaitRuns: z.number().min(0).max(10_000).default(0),
    })
    .default(() => ({ periodSeconds: 300, maxPagesPerRun: 50, pageSize: 25, unknownWaitRuns: 0 })),
  /**
   * How provider events arrive: `push` (SES and SMS events through EventBridge/SNS to the evidence
   * function) or `pull` (the REST convention's feed, read by the reconcile run).
   */
  evidence: z.enum(['push', 'pull']).default('push'),
  /**
   * Provider events per evidence invocation. Absent: as the benchmark measured it (one invocation per
   * event, or fewer when events are drained from a queue in batches).
   */
  evidenceBatchSize: z.number().int().min(1).max(10_000).optional(),
  /** The shared send pace per channel (SENDPROOF_RATE_LIMITS), when one is configured. */
  pacing: z
    .strictObject({
      email: z
        .strictObject({
          perSecond: z.number().positive(),
          slotMs: z.number().int().min(50).max(1000).default(500),
        })
        .optional(),
      sms: z
        .strictObject({
          perSecond: z.number().positive(),
          slotMs: z.number().int().min(50).max(1000).default(500),
        })
        .optional(),
    })
    .default({}),
  /**
   * Whether email and SMS go through one transport (`shared`, as the harness's REST simulator `rest`
   * serves both) or one each (`per_channel`: SES and an SMS provider). The dispatcher's hold gate reads
   * one `hold#<transport>` item per transport (lib/rate/TransportHolds.ts).
   */
  transports: z.enum(['per_channel', 'shared']).default('per_channel'),
  /** A per-tenant quota (sends per minute) applied to every tenant, when configured. */
  tenantQuotaPerMinute: z.number().int().min(1).optional(),
  /** Account rates at the providers, when known: SES's maximum send rate, SMS parts per second by country. */
  accounts: z
    .strictObject({
      sesMaxSendRate: z.number().positive().optional(),
      smsPartsPerSecond: byCountry(z.number().positive()).default({}),
      /** SMS parts per message (a message over one segment is several parts). */
      smsPartsPerMessage: z.number().min(1).max(10).default(1),
    })
    .default(() => ({ smsPartsPerSecond: {}, smsPartsPerMessage: 1 })),
});

export const MixSchema = z
  .strictObject({
    name: z.string().min(1).max(200),
    purposes: z.array(PurposeMixSchema).min(1),
    /** Where SMS go: ISO 3166-1 alpha-2 codes and their shares. */
    smsCountries: byCountry(share).default({}),
    /** Shares of notifications answered 429 once, left `unknown` (answer lost), bounced. */
    rates: z.strictObject({ retry: share, unknown: share, bounce: share }),
    tenants: z.strictObject({
      count: z.number().int().min(1),
      /** The share of all traffic the largest tenant sends. */
      topShare: z.number().gt(0).max(1),
    }),
    deployment: DeploymentSchema.default(() => DeploymentSchema.parse({})),
  })
  .superRefine((mix, ctx) => {
    const total = mix.purposes.reduce((sum, p) => sum + p.share, 0);
    if (Math.abs(total - 1) > SUM_TOLERANCE)
      ctx.addIssue({
        code: 'custom',
        path: ['purposes'],
        message: `purpose shares add up to ${total}, not 1`,
      });
    const names = mix.purposes.map((p) => p.purpose);
    const repeated = names.filter((n, i) => names.indexOf(n) !== i);
    if (repeated.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['purposes'],
        message: `purpose listed twice: ${repeated.join(', ')}`,
      });
    const sms = mix.purposes.some((p) => (p.channels.sms ?? 0) > 0 && p.share > 0);
    if (sms && !sumsToOne(mix.smsCountries))
      ctx.addIssue({
        code: 'custom',
        path: ['smsCountries'],
        message: 'SMS traffic needs its destination countries, with shares adding up to 1',
      });
    const { retry, unknown, bounce } = mix.rates;
    if (retry + unknown + bounce > 1)
      ctx.addIssue({ code: 'custom', path: ['rates'], message: 'retry + unknown + bounce exceed 1' });
    if (mix.tenants.count === 1 && mix.tenants.topShare !== 1)
      ctx.addIssue({
        code: 'custom',
        path: ['tenants', 'topShare'],
        message: 'one tenant sends all the traffic (1)',
      });
    if (mix.tenants.topShare * mix.tenants.count < 1 - SUM_TOLERANCE)
      ctx.addIssue({
        code: 'custom',
        path: ['tenants', 'topShare'],
        message: `the largest of ${mix.tenants.count} tenants sends at least 1/${mix.tenants.count} of the traffic`,
      });
  });

export type Mix = z.output<typeof MixSchema>;
export type MixInput = z.input<typeof MixSchema>;
export type Deployment = z.output<typeof DeploymentSchema>;
export type DeploymentInput = z.input<typeof DeploymentSchema>;

export class MixError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: not a valid capacity mix:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'MixError';
  }
}

export const parseMix = (raw: unknown, file = 'mix'): Mix => {
  const parsed = MixSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw new MixError(
    file,
    parsed.error.issues.map(
      (issue) => `${issue.path.length ? issue.path.join('.') : '(top level)'}: ${issue.message}`,
    ),
  );
};

export const loadMix = (file: string): Mix => {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new MixError(file, [`cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new MixError(file, [`is not JSON (${error instanceof Error ? error.message : String(error)})`]);
  }
  return parseMix(raw, file);
};
