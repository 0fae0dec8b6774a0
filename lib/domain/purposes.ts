import * as z from 'zod/mini';
import './zodLocale.js';
import { FINAL_ROW_RETENTION_FLOOR_DAYS, INTAKE_QUEUE } from '../queueDefinition.js';
import { BUILT_IN_SLOS, DEFAULT_SLO, type Slo, sloSchema } from '../slo/objectives.js';
import { ConfigurationError } from './errors.js';
import { lazySchema } from './lazySchema.js';
import { parseOrThrow } from './parseOrThrow.js';

export const ChannelSchema = z.enum(['email', 'sms']);

/** How far ahead a `sendAt` may lie (the publisher's limit, and the most a caller may configure). */
export const SCHEDULE_HORIZON_DAYS = 30;
/**
 * The longest a provider adapter holds a message for later: Twilio `SendAt` up to 35 days
 * (https://www.twilio.com/docs/api/errors/35115: "no more than 35 days in the future"); Resend 30 days.
 */
export const PROVIDER_HOLD_MAX_DAYS = 35;
/** The shortest retention any purpose may have: the queues' horizon and the scheduling horizon. */
export const RETENTION_FLOOR_DAYS = Math.max(FINAL_ROW_RETENTION_FLOOR_DAYS, SCHEDULE_HORIZON_DAYS);
export type Channel = z.infer<typeof ChannelSchema>;

/**
 * A purpose is a registered policy for one kind of message. Its version is recorded on every claim so
 * an auditor can tell which rules were in force when a message was attempted.
 */
/** Post-acceptance facts that may count as "definitely not delivered" for a fallback. */
export const FALLBACK_FACTS = [
  'bounced_permanent',
  'provider_suppressed',
  'carrier_failed',
  'ttl_expired',
] as const;

/**
 * Built on first use (lib/domain/lazySchema.ts): only a policy from the deployment's configuration
 * (SENDPROOF_PURPOSES) or a caller's own registry is parsed. The built-in policies are written in the
 * schema's output form and checked against it by test/unit/domain/purposes.test.ts.
 */
export const purposePolicySchema = lazySchema('purposePolicy', () =>
  z
    .strictObject({
      purpose: z.string().check(z.regex(/^[a-z][a-z0-9-]{1,47}$/)),
      policyVersion: z.string().check(z.minLength(1), z.maxLength(32)),
      /** true: a new template revision is a new notification (receipts); false: it is not (resets). */
      templateRevisionInKey: z.boolean(),
      expiryRequired: z.boolean(),
      /** Provider attempts per claim, first one included. A retry reuses the key and the content hash. */
      maxAttempts: z.number().check(z.int(), z.gte(1), z.lte(20)),
      /** How long an `unknown` row may wait for evidence before it is quarantined for a human. */
      ambiguityDeadlineSeconds: z.number().check(z.int(), z.gte(60), z.lte(30 * 86_400)),
      /** Used when the intent does not say `delivery`. */
      defaultDelivery: z.enum(['all', 'fallback']),
      /** `email-only`: attachments ride on email and are dropped from SMS; `forbidden`: an intent with one is invalid. */
      attachments: z.enum(['forbidden', 'email-only', 'required-on-email']),
      /**
       * Days a ledger row is kept after it becomes terminal (the archive keeps the history longer). Never
       * shorter than the queues' horizon (FINAL_ROW_RETENTION_FLOOR_DAYS): a redriven copy of the intent that
       * arrives after the row's TTL would find no row, claim again and resend. Nor than the scheduling horizon
       * (SCHEDULE_HORIZON_DAYS), nor, with `providerScheduling`, a provider's hold window
       * (PROVIDER_HOLD_MAX_DAYS): a cancel marker or a seal kept for less would be gone when the send is due.
       */
      retentionDays: z.number().check(
        z.int(),
        z.gte(FINAL_ROW_RETENTION_FLOOR_DAYS, {
          message: `must be at least ${FINAL_ROW_RETENTION_FLOOR_DAYS} days (the intake DLQ keeps a message ${INTAKE_QUEUE.retentionDays} days, and a redriven one can still be received for ${INTAKE_QUEUE.intakeRetentionDays} more); a shorter retention lets a redrive after the row's TTL claim again and resend`,
        }),
        z.gte(SCHEDULE_HORIZON_DAYS, {
          message: `must be at least ${SCHEDULE_HORIZON_DAYS} days (the scheduling horizon: a send may be scheduled ${SCHEDULE_HORIZON_DAYS} days ahead, and the cancel marker that must stop it is kept for the longest retention); a shorter retention lets a cancel expire before the send it withdrew`,
        }),
        z.lte(3650),
      ),
      /**
       * Days each archived transition stays under Object Lock (COMPLIANCE retain-until = transition time +
       * this). Unset: the deployment's archive default (`archiveRetentionDays`, 365).
       */
      archiveRetentionDays: z.optional(z.number().check(z.int(), z.gte(1), z.lte(36_500))),
      /**
       * Which facts reported after the provider accepted the active channel move a fallback flow on (a
       * permanent bounce, a carrier failure, an SMS TTL expiry). Absent: all of them; `[]`: none. A soft
       * bounce, a delay or TEXT_UNKNOWN can never be listed.
       */
      fallbackOn: z.optional(z.array(z.enum(FALLBACK_FACTS))),
      /**
       * Whether a business cancel (`sendproof cancel`, `cancelNotifications()`) can withdraw it. Only these
       * purposes pay the strongly consistent cancel-marker read before each provider call.
       */
      cancellable: z._default(z.boolean(), false),
      /**
       * Hand a scheduled send to the provider (Resend `scheduled_at`, Twilio `SendAt`) when its adapter
       * declares scheduling and sendAt lies inside the adapter's window; otherwise the ledger's sweep holds it.
       */
      providerScheduling: z._default(z.boolean(), false),
      /**
       * SMS destination countries allowed (ISO 3166-1 alpha-2, read from the E.164 number). Absent: any
       * country. A refused destination is written `blocked: country_not_allowed` with no provider call.
       */
      smsCountries: z.optional(
        z
          .array(z.string().check(z.regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code such as "GB"')))
          .check(z.minLength(1)),
      ),
      /**
       * SMS spend circuit breaker per destination country: at most `maxSends` SMS of this purpose per
       * country in a `windowSeconds` window; the first one over opens the breaker for `cooldownSeconds`
       * (further SMS end `blocked: spend_breaker_open`) or until `sendproof breaker reset`. Email is unaffected.
       */
      smsSpendBreaker: z.optional(
        z.strictObject({
          maxSends: z.number().check(z.int(), z.gte(1), z.lte(10_000_000)),
          windowSeconds: z._default(z.number().check(z.int(), z.gte(1), z.lte(86_400)), 3600),
          cooldownSeconds: z._default(z.number().check(z.int(), z.gte(1), z.lte(86_400)), 900),
        }),
      ),
      /**
       * Service level objectives (lib/slo/objectives.ts): acceptance and delivery latency from the time the
       * caller asked, and the duplicate budget. Absent: DEFAULT_SLO (99 % accepted within 2 min, delivered
       * within 10 where the channel reports delivery, at most 1 in 100,000 accepted twice, over 28 days).
       */
      slo: z.optional(sloSchema()),
    })
    .check(
      z.superRefine((policy, ctx) => {
        // A provider-held send (`provider_scheduled`) waits at the provider up to its hold window; its row,
        // its seal and the cancel marker that must reach it are all kept for the retention.
        if (policy.providerScheduling && policy.retentionDays < PROVIDER_HOLD_MAX_DAYS)
          ctx.addIssue({
            code: 'custom',
            path: ['retentionDays'],
            message: `must be at least ${PROVIDER_HOLD_MAX_DAYS} days with providerScheduling (a provider may hold a send that long: Twilio SendAt up to ${PROVIDER_HOLD_MAX_DAYS} days)`,
          });
      }),
    ),
);
export type PurposePolicy = z.output<ReturnType<typeof purposePolicySchema>>;

/** Frozen, so a caller that changed a policy it was handed would change no other registry's. */
const deepFreeze = <T>(value: T): T => {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
};

export const BUILT_IN_PURPOSES: readonly PurposePolicy[] = deepFreeze([
  {
    purpose: 'password-reset',
    policyVersion: 'password-reset/1',
    templateRevisionInKey: false,
    expiryRequired: true,
    maxAttempts: 3,
    ambiguityDeadlineSeconds: 15 * 60,
    defaultDelivery: 'all',
    attachments: 'forbidden',
    retentionDays: 30,
    // Requested by the user and wanted within seconds; its expiry is its withdrawal. Not worth a
    // strongly consistent read on the most latency-sensitive path.
    cancellable: false,
    providerScheduling: false,
    slo: BUILT_IN_SLOS['password-reset'],
  },
  {
    purpose: 'receipt',
    policyVersion: 'receipt/1',
    templateRevisionInKey: true,
    expiryRequired: false,
    maxAttempts: 5,
    ambiguityDeadlineSeconds: 24 * 3600,
    defaultDelivery: 'all',
    attachments: 'email-only',
    retentionDays: 400,
    // Receipts are financial records: kept about seven years.
    archiveRetentionDays: 2_557,
    // A refund withdraws the receipt (seed 004).
    cancellable: true,
    providerScheduling: false,
    slo: BUILT_IN_SLOS.receipt,
  },
  {
    purpose: 'health-report',
    policyVersion: 'health-report/1',
    templateRevisionInKey: false,
    expiryRequired: false,
    maxAttempts: 4,
    ambiguityDeadlineSeconds: 4 * 3600,
    defaultDelivery: 'fallback',
    attachments: 'required-on-email',
    retentionDays: 400,
    // A report published in error must be stoppable.
    cancellable: true,
    providerScheduling: false,
    slo: BUILT_IN_SLOS['health-report'],
  },
]);

/** Policies already in the schema's output form: the built-ins (frozen) and what `withOverrides` parsed. */
const validated = new WeakSet<object>(BUILT_IN_PURPOSES);

export class PurposeRegistry {
  private readonly byName: Map<string, PurposePolicy>;
  /** Each policy is parsed, except the built-ins and `withOverrides`' own: no schema is built for those. */
  constructor(policies: readonly z.input<ReturnType<typeof purposePolicySchema>>[] = BUILT_IN_PURPOSES) {
    this.byName = new Map(
      policies.map((p) => [
        p.purpose,
        validated.has(p) ? (p as PurposePolicy) : parseOrThrow(purposePolicySchema(), p),
      ]),
    );
  }
  /** Built-ins plus (and overridden by) extra policies, e.g. from deployment configuration. */
  static withOverrides(extra: readonly unknown[]): PurposeRegistry {
    const parsed = extra.map((p, i) => {
      const result = purposePolicySchema().safeParse(p);
      if (!result.success) {
        const problems = result.error.issues.map(
          (issue) => `${issue.path.join('.') || '(policy)'}: ${issue.message}`,
        );
        throw new ConfigurationError(`purpose policy #${i} is invalid: ${problems.join('; ')}`);
      }
      validated.add(result.data);
      return result.data;
    });
    const merged = new Map(BUILT_IN_PURPOSES.map((p) => [p.purpose, p]));
    for (const p of parsed) merged.set(p.purpose, p);
    return new PurposeRegistry([...merged.values()]);
  }
  find(purpose: string): PurposePolicy | undefined {
    return this.byName.get(purpose);
  }
  get(purpose: string): PurposePolicy {
    const policy = this.byName.get(purpose);
    if (!policy) throw new ConfigurationError(`purpose "${purpose}" is not registered`);
    return policy;
  }
  names(): string[] {
    return [...this.byName.keys()];
  }
}

const MS_PER_DAY = 86_400_000;

/** The objectives in force for a purpose: its own `slo`, else DEFAULT_SLO. */
export const sloOf = (policy: Pick<PurposePolicy, 'slo'>): Slo => policy.slo ?? DEFAULT_SLO;

/** Object Lock days of an archived transition of this purpose (unknown purposes get the default). */
export const archiveRetentionDaysOf =
  (registry: PurposeRegistry, defaultDays: number) =>
  (purpose: string | null): number =>
    (purpose ? registry.find(purpose)?.archiveRetentionDays : undefined) ?? defaultDays;

/** The DynamoDB TTL (epoch seconds) for a row that became final at `now`, under its purpose's retention. */
export const retentionTtl = (policy: Pick<PurposePolicy, 'retentionDays'>, now: number): number =>
  Math.floor((now + policy.retentionDays * MS_PER_DAY) / 1000);
