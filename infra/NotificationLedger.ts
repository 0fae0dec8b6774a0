import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Duration, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as ses from 'aws-cdk-lib/aws-ses';
import * as smsvoice from 'aws-cdk-lib/aws-smsvoice';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { loadNamedQueries, type NamedQuery } from '../lib/archive/namedQueries.js';
import { ENV, type ProviderCircuitSettings, providerCircuitSchema } from '../lib/config.js';
import { parseOrThrow } from '../lib/domain/parseOrThrow.js';
import { type PurposePolicy, PurposeRegistry } from '../lib/domain/purposes.js';
import { ATTENTION_SHARDS } from '../lib/ledger/attentionIndex.js';
import { INTAKE_QUEUE } from '../lib/queueDefinition.js';
import { maxConcurrencyFor, type RateSettingsInput, rateSettingsSchema } from '../lib/rate/settings.js';
import { checkTemplates } from '../lib/templates/check.js';
import { Alarms, type AlarmThresholds } from './constructs/Alarms.js';
import { AuditArchive } from './constructs/AuditArchive.js';
import { Dispatcher } from './constructs/Dispatcher.js';
import { EvidenceRecorder } from './constructs/EvidenceRecorder.js';
import { IntakeQueue } from './constructs/IntakeQueue.js';
import { LedgerTables } from './constructs/LedgerTables.js';
import { OperatorConsole, type OperatorConsoleProps } from './constructs/OperatorConsole.js';
import { OutcomeEvents, type OutcomeEventsProps } from './constructs/OutcomeEvents.js';
import { ReconcilerWorkflow } from './constructs/ReconcilerWorkflow.js';
import { TRACING_CONTEXT } from './constructs/SendproofFunction.js';
import { ServiceLevels } from './constructs/ServiceLevels.js';
import {
  protectCountryRules,
  protectedSmsCountries,
  unsupportedSmsCountries,
} from './constructs/smsProtect.js';
import { acknowledge } from './nag.js';

export type EmailTransportName = 'ses' | 'resend' | 'sendgrid' | 'rest' | 'simulator';
export type SmsTransportName = 'sms-v2' | 'twilio' | 'rest' | 'simulator';

/** How often the reconciler runs unless `reconcileSchedule` says otherwise (the cost model spreads its runs). */
export const DEFAULT_RECONCILE_EVERY_MINUTES = 5;

export interface EmailChannelProps {
  transport: EmailTransportName;
  /**
   * Providers to fail over to, in order, after `transport` (e.g. `['sendgrid']` behind `ses`). A row moves
   * to the next one only when the first provably did not take it (docs/transports.md, "Failover").
   */
  failover?: readonly EmailTransportName[];
  /** The From address. For SES it must belong to `sesIdentity`. */
  fromAddress: string;
  /** SES only: the verified identity (domain or address) the dispatcher may send as. */
  sesIdentity?: string;
  /**
   * SES only: an existing SES v2 configuration set to send through. Absent: the construct creates one.
   * Either way the construct adds an EventBridge event destination to it.
   */
  sesConfigurationSetName?: string;
}

export interface SmsChannelProps {
  transport: SmsTransportName;
  /** Providers to fail over to, in order, after `transport` (e.g. `['twilio']` behind `sms-v2`). */
  failover?: readonly SmsTransportName[];
  /**
   * sms-v2 only: ARN of the origination identity (phone number, pool or sender id) the dispatcher may send
   * from. The construct creates the SMS configuration set and its SNS event destination.
   */
  originationIdentityArn?: string;
  /** twilio only: the sender — a Twilio phone number (E.164) or a Messaging Service SID (`MG…`). */
  senderId?: string;
}

export interface NotificationLedgerProps {
  email: EmailChannelProps;
  sms: SmsChannelProps;
  /**
   * One Secrets Manager secret with the credentials of the non-AWS providers (Resend, SendGrid, Twilio, REST:
   * JSON `{ resendApiKey?, sendgridApiKey?, twilioAccountSid?, twilioAuthToken?, … }`), read by
   * the functions at run time by ARN. Required when a channel uses one of those transports. Import it with
   * `Secret.fromSecretCompleteArn` so the grant names the exact secret.
   */
  providerSecret?: secretsmanager.ISecret;
  /** REST transport base URL (no credentials in it; those live in `providerSecret`). */
  restBaseUrl?: string;
  /**
   * How long the REST provider remembers an Idempotency-Key, in seconds (120..2592000), as the provider
   * documents it. The dispatcher and the reconciler measure the replay window against it. Default 86400.
   */
  restKeyRetentionSeconds?: number;
  /** Purpose policies added to (or overriding) the built-ins; validated at synth, passed as JSON. */
  purposes?: PurposePolicy[];
  /** Object Lock COMPLIANCE default retention for archived transitions. Default 365 days. */
  archiveRetentionDays?: number;
  /** Where alarms go. Absent: the construct creates an encrypted topic (subscribe to it yourself). */
  alarmTopic?: sns.ITopic;
  alarmThresholds?: AlarmThresholds;
  /** When the reconciler runs. Default every 5 minutes. */
  reconcileSchedule?: scheduler.ScheduleExpression;
  /** Pages per reconcile execution before it leaves the rest to the next schedule. Default 50. */
  reconcileMaxPagesPerRun?: number;
  /** Concurrency limits. */
  concurrency?: {
    /** Concurrent dispatcher invocations the SQS poller may run (2..1000). Default 10. */
    dispatcherMaxConcurrency?: number;
    /** Records one dispatcher invocation works on at once (1..50). Default 5. */
    recordConcurrency?: number;
  };
  /**
   * Send pace per transport (`{ transports: { ses: { perSecond: 14 } } }`, the provider's quota) and quota
   * per tenant, shared by every dispatcher (lib/rate/settings.ts). Without an explicit
   * `concurrency.dispatcherMaxConcurrency`, the SQS event source's maximum concurrency is derived from it.
   */
  rateLimits?: RateSettingsInput;
  /**
   * The provider circuits shared by every dispatcher (lib/transports/health.ts), used when a channel has
   * `failover` providers: `failures` 5xx / never-left answers within `windowSeconds` open a provider's
   * circuit for `openSeconds`, then one probe decides. Defaults: 5 in 60 s, open 60 s. The circuit also
   * opens when delivery reports fall behind (lib/transports/reportLag.ts): of the messages accepted within
   * `reportWindowSeconds` (default 1800) whose `reportLagSeconds` (600) have passed, at least
   * `reportMinSample` (20), a share of at least `reportLateShare` (0.5) has no report in time.
   */
  providerCircuit?: Partial<ProviderCircuitSettings>;
  /** Ledger claim lease in seconds (5..900). Default 90. */
  leaseSeconds?: number;
  /**
   * Shards of the attention index's partition key (1..64), so that a provider outage parking thousands
   * of rows in one state spreads them over that many GSI partitions. Set on every function that reads or
   * writes the ledger; may grow between deployments, never shrink. Default 4.
   */
  attentionShards?: number;
  /**
   * Active X-Ray tracing on every function and the reconcile state machine. Default true. At low volume
   * Lambda's sampling (the first request each second, 5% of the rest) traces nearly every invocation, which
   * the cost bench prices at about $2 per million notifications (docs/cost.md); `false` turns it off.
   */
  tracing?: boolean;
  /** Where intents' attachments are read from: the dispatcher gets s3:GetObject under this prefix only. */
  attachments?: { bucket: s3.IBucket; prefix?: string };
  /** Deliveries of an intent before the intake queue parks it on the DLQ (≥ 5). Default 5. */
  maxReceiveCount?: number;
  logRetention?: logs.RetentionDays;
  /** Athena named queries; default: the archive's own (lib/archive). */
  namedQueries?: readonly NamedQuery[];
  /**
   * The operator console (API Gateway + Cognito + CloudFront). Default: created with its own user pool.
   * Pass `userPool` (+ `userPoolDomain`) to use an existing pool with `viewer`/`operator` groups, or `false`.
   */
  console?:
    | false
    | Pick<OperatorConsoleProps, 'userPool' | 'userPoolDomain' | 'domainPrefix' | 'rateLimitPerSecond'>;
  /**
   * Your templates folder (`<id>/<revision>/template.json` + channel files + `manifest.json`, as
   * `sendproof template` writes it), deployed with the dispatcher. Relative paths resolve against the
   * working directory of `cdk synth`. Checked at synth like `sendproof template check`. Default: the
   * templates shipped with Sendproof (its examples).
   */
  templatesDir?: string;
  /**
   * Outcome events for the calling service (infra/constructs/OutcomeEvents.ts): the bus to publish to
   * (default: one is created), tenants' HTTPS endpoints (API destinations), and how long the stream
   * gathers transitions before they are published (`maxBatchingWindow`, default 5 s).
   */
  outcomeEvents?: Pick<OutcomeEventsProps, 'eventBus' | 'endpoints' | 'maxBatchingWindow'>;
}

const NEEDS_PROVIDER_SECRET = new Set<string>(['resend', 'sendgrid', 'twilio', 'rest']);

/** A channel's providers in failover order: its transport, then its `failover` list. */
export const emailProvidersOf = (props: Pick<NotificationLedgerProps, 'email'>): EmailTransportName[] => [
  props.email.transport,
  ...(props.email.failover ?? []),
];
export const smsProvidersOf = (props: Pick<NotificationLedgerProps, 'sms'>): SmsTransportName[] => [
  props.sms.transport,
  ...(props.sms.failover ?? []),
];
/** Dispatcher timeout; the intake queue's visibility timeout is six times this. */
export const DISPATCHER_TIMEOUT = Duration.seconds(INTAKE_QUEUE.dispatcherTimeoutSeconds);

/**
 * Sendproof in one construct: drop it into a stack, publish intents to `intakeQueue`. Each concern is its
 * own construct (infra/constructs); this one composes them and decides who may touch what, through the
 * SendproofFunction binders only.
 */
export class NotificationLedger extends Construct {
  readonly intake: IntakeQueue;
  readonly tables: LedgerTables;
  readonly dispatcher: Dispatcher;
  readonly reconciler: ReconcilerWorkflow;
  readonly evidence: EvidenceRecorder;
  readonly archive: AuditArchive;
  readonly alarms: Alarms;
  readonly alarmTopic: sns.ITopic;
  readonly contentHashSecret: secretsmanager.Secret;
  readonly sealKey: kms.Key;
  readonly sesConfigurationSetName?: string;
  readonly console?: OperatorConsole;
  readonly outcomeEvents: OutcomeEvents;
  readonly serviceLevels: ServiceLevels;

  constructor(scope: Construct, id: string, props: NotificationLedgerProps) {
    super(scope, id);
    validate(props);
    // Before any child exists: every function and the state machine below read it (tracingOn).
    this.node.setContext(TRACING_CONTEXT, props.tracing ?? true);
    const stack = Stack.of(this);
    const emailProviders = emailProvidersOf(props);
    const smsProviders = smsProvidersOf(props);
    const failover = emailProviders.length > 1 || smsProviders.length > 1;
    // Validated here so a typo fails `cdk synth`, not the first cold start.
    PurposeRegistry.withOverrides(props.purposes ?? []);
    const purposesJson = JSON.stringify(props.purposes ?? []);
    const rateLimits = props.rateLimits ? parseOrThrow(rateSettingsSchema(), props.rateLimits) : undefined;

    this.contentHashSecret = new secretsmanager.Secret(this, 'ContentHashKey', {
      description: 'Sendproof HMAC key for content hashes (generated; never leaves Secrets Manager)',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    acknowledge(
      this.contentHashSecret,
      'AwsSolutions-SMG4',
      'Rotating the HMAC key would change every content hash and break the hash-mismatch check for in-flight claims; a key change is a deliberate, versioned migration, not a timer.',
    );

    // One customer-managed key for the topics this construct owns: SNS encryption with the AWS-managed key
    // cannot be used by service principals (CloudWatch alarms, End User Messaging SMS).
    const topicKey = new kms.Key(this, 'TopicKey', {
      description: 'Sendproof SNS topics (alarms, SMS events)',
      enableKeyRotation: true,
    });
    for (const service of ['cloudwatch.amazonaws.com', 'sms-voice.amazonaws.com']) {
      topicKey.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: `AllowPublishFrom-${service.split('.')[0]}`,
          principals: [new iam.ServicePrincipal(service)],
          actions: ['kms:GenerateDataKey*', 'kms:Decrypt'],
          resources: ['*'],
          conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
        }),
      );
    }

    this.intake = new IntakeQueue(this, 'Intake', {
      dispatcherTimeout: DISPATCHER_TIMEOUT,
      maxReceiveCount: props.maxReceiveCount,
    });
    this.tables = new LedgerTables(this, 'Tables');

    // --- dispatcher ---------------------------------------------------------------------------------
    this.dispatcher = new Dispatcher(this, 'Dispatcher', {
      queue: this.intake.queue,
      timeout: DISPATCHER_TIMEOUT,
      // Paced: as many concurrent batches as keep the slowest paced transport busy, no more (the rest
      // would only hold messages in flight waiting for tokens).
      maxConcurrency:
        props.concurrency?.dispatcherMaxConcurrency ??
        (rateLimits
          ? maxConcurrencyFor(rateLimits, {
              recordsAtOnce: props.concurrency?.recordConcurrency ?? 5,
              sendLatencyMs: 300,
              cap: 1000,
            })
          : undefined) ??
        10,
      logRetention: props.logRetention,
      templatesDir: props.templatesDir === undefined ? undefined : resolve(props.templatesDir),
    });
    // Parked intents are sealed with this key (AWS Encryption SDK); only the dispatcher opens them.
    this.sealKey = new kms.Key(this, 'SealKey', {
      description: 'Sendproof: seals intents that left the happy path (AWS Encryption SDK data keys)',
      enableKeyRotation: true,
    });
    // The batch's gate facts are one BatchGetItem over both tables (lib/ledger/DynamoGateFacts.ts). The
    // dispatcher also suppresses recipients (UpdateItem only): a bounce kept before the accepted write,
    // and a provider's opt-out answer (lib/dispatch/optOut.ts).
    const dispatch = this.tables
      .bindTo(this.dispatcher.function, { ledger: 'readwrite', suppression: 'update', batchGateReads: true })
      .bindContentHashSecret(this.contentHashSecret)
      .bindSealKey(this.sealKey)
      .bindIntakeQueue(this.intake.queue, 'visibility')
      .setEnv(ENV.maxReceiveCount, String(props.maxReceiveCount ?? INTAKE_QUEUE.maxReceiveCount))
      // The sweep looks at a parked message one visibility timeout after it should have come back.
      .setEnv(
        ENV.parkGraceSeconds,
        String(DISPATCHER_TIMEOUT.toSeconds() * INTAKE_QUEUE.visibilityTimeoutMultiplier),
      );
    const transportEnv = (fn: typeof dispatch) => {
      fn.setEnv(ENV.emailTransport, props.email.transport)
        .setEnv(ENV.smsTransport, props.sms.transport)
        .setEnv(ENV.emailFrom, props.email.fromAddress)
        .setEnv(ENV.purposes, purposesJson);
      // The failover lists: the dispatcher moves rows along them, the reconciler looks up by the holder.
      if (emailProviders.length > 1) fn.setEnv(ENV.emailProviders, emailProviders.join(','));
      if (smsProviders.length > 1) fn.setEnv(ENV.smsProviders, smsProviders.join(','));
      if (props.restBaseUrl) fn.setEnv(ENV.restBaseUrl, props.restBaseUrl);
      if (props.restKeyRetentionSeconds !== undefined)
        fn.setEnv(ENV.restKeyRetentionSeconds, String(props.restKeyRetentionSeconds));
      // Twilio's sender is not an AWS identity; the adapter reads it from the same setting.
      if (smsProviders.includes('twilio') && props.sms.senderId)
        fn.setEnv(ENV.smsOriginationIdentity, props.sms.senderId);
      if (props.providerSecret) fn.bindProviderSecret(props.providerSecret);
      return fn;
    };
    transportEnv(dispatch);
    if (props.concurrency?.recordConcurrency !== undefined) {
      dispatch.setEnv(ENV.recordConcurrency, String(props.concurrency.recordConcurrency));
    }
    if (props.leaseSeconds !== undefined) dispatch.setEnv(ENV.leaseSeconds, String(props.leaseSeconds));
    if (rateLimits) dispatch.setEnv(ENV.rateLimits, JSON.stringify(rateLimits));
    // The provider circuits live in the ledger table (`health#<provider>`), which the dispatcher writes
    // (and the reconcile run, when delivery reports fall behind; the outcomes consumer counts them).
    const circuitJson = JSON.stringify(parseOrThrow(providerCircuitSchema(), props.providerCircuit ?? {}));
    if (failover) dispatch.setEnv(ENV.providerCircuit, circuitJson);

    if (emailProviders.includes('ses')) {
      const configurationSetName =
        props.email.sesConfigurationSetName ??
        new ses.ConfigurationSet(this, 'SesConfigurationSet', {
          reputationMetrics: true,
          sendingEnabled: true,
        }).configurationSetName;
      this.sesConfigurationSetName = configurationSetName;
      dispatch.bindEmailSender({
        identityArn: stack.formatArn({
          service: 'ses',
          resource: 'identity',
          resourceName: props.email.sesIdentity!,
        }),
        configurationSetName,
        fromAddress: props.email.fromAddress,
      });
    }

    // --- evidence (needs to exist before the SMS sender binding: it owns the SMS configuration set) -------
    this.evidence = new EvidenceRecorder(this, 'Evidence', {
      topicKey,
      sesConfigurationSetName: this.sesConfigurationSetName,
      smsEvents: smsProviders.includes('sms-v2'),
      logRetention: props.logRetention,
    });
    // Permanent bounces and complaints add the recipient to the suppression list; an inbound STOP/START
    // adds or lifts its number's, keyed by the content-hash HMAC as the dispatcher reads it (issue 29).
    this.tables
      .bindTo(this.evidence.function, { ledger: 'readwrite', suppression: 'readwrite' })
      .setEnv(ENV.purposes, purposesJson);
    // Twilio reports message status to the evidence endpoint (the key hash rides in the URL).
    if (smsProviders.includes('twilio'))
      dispatch.setEnv(ENV.twilioStatusCallbackUrl, `${this.evidence.webhookUrl.url}twilio`);
    this.tables
      .bindTo(this.evidence.webhook, { ledger: 'readwrite', suppression: 'readwrite' })
      .setEnv(ENV.purposes, purposesJson);
    // Every event's label is opened with keys derived from the deployment secret (lib/evidence/labelAuth.ts);
    // an inbound STOP's number is keyed with it too (lib/ledger/optOut.ts).
    this.evidence.function.bindContentHashSecret(this.contentHashSecret);
    this.evidence.webhook.bindContentHashSecret(this.contentHashSecret);
    // The purposes' SMS countries also hold at the provider, for any caller that bypasses Sendproof.
    const smsCountries = protectedSmsCountries(props.purposes ?? []);
    if (smsProviders.includes('sms-v2') && this.evidence.smsConfigurationSet && smsCountries) {
      const protect = new smsvoice.CfnProtectConfiguration(this, 'SmsProtectConfiguration', {
        countryRuleSet: { sms: protectCountryRules(smsCountries) },
        deletionProtectionEnabled: false,
      });
      this.evidence.smsConfigurationSet.protectConfigurationId = protect.attrProtectConfigurationId;
    }
    if (smsProviders.includes('sms-v2') && this.evidence.smsConfigurationSet) {
      dispatch.bindSmsSender({
        originationIdentityArn: props.sms.originationIdentityArn!,
        configurationSetName: this.evidence.smsConfigurationSet.ref,
      });
    }
    if (props.attachments)
      dispatch.allowAttachmentsRead(props.attachments.bucket, props.attachments.prefix ?? '');

    // --- reconciler -----------------------------------------------------------------------------------
    this.reconciler = new ReconcilerWorkflow(this, 'Reconciler', {
      schedule:
        props.reconcileSchedule ??
        scheduler.ScheduleExpression.rate(Duration.minutes(DEFAULT_RECONCILE_EVERY_MINUTES)),
      maxPagesPerRun: props.reconcileMaxPagesPerRun ?? 50,
      logRetention: props.logRetention,
    });
    // Lookups: the reconciler asks providers about lost answers (provider secret), never hashes content;
    // it reads the content-hash secret only to open the labels of pulled events (lib/evidence/labelAuth.ts).
    // The sweep re-publishes a notice naming a sealed notification; it never opens seals itself, and it
    // releases (deletes) a seal whose rows are all final. Pull evidence it records (a bounce fetched from a
    // provider's feed) suppresses the recipient, as the evidence function's does.
    transportEnv(
      this.tables
        .bindTo(this.reconciler.function, {
          ledger: 'readwrite',
          suppression: 'readwrite',
          releaseSeals: true,
        })
        .bindIntakeQueue(this.intake.queue, 'send')
        .setEnv(
          ENV.parkGraceSeconds,
          String(DISPATCHER_TIMEOUT.toSeconds() * INTAKE_QUEUE.visibilityTimeoutMultiplier),
        )
        .bindContentHashSecret(this.contentHashSecret),
    );

    // Every function that reads or writes the attention index uses the same shard count.
    const attentionShards = String(props.attentionShards ?? ATTENTION_SHARDS.default);
    for (const fn of [dispatch, this.reconciler.function, this.evidence.function])
      fn.setEnv(ENV.attentionShards, attentionShards);

    // --- archive ----------------------------------------------------------------------------------------
    this.archive = new AuditArchive(this, 'Archive', {
      ledger: this.tables.ledger,
      retentionDays: props.archiveRetentionDays ?? 365,
      purposesJson,
      namedQueries: props.namedQueries ?? loadNamedQueries(),
      logRetention: props.logRetention,
    });

    // --- outcome events for the caller (a second reader of the stream) ---------------------------------
    this.outcomeEvents = new OutcomeEvents(this, 'OutcomeEvents', {
      ...props.outcomeEvents,
      ledger: this.tables.ledger,
      purposesJson,
      logRetention: props.logRetention,
    });
    // With failover, the consumer keeps the delivery-report counters (`reports#…` items, UpdateItem only)
    // that the reconcile run judges (lib/transports/reportLag.ts).
    if (failover) {
      const outcomes = this.tables
        .bindReportCounters(this.outcomeEvents.function)
        .setEnv(ENV.providerCircuit, circuitJson);
      // The lists say that the deployment fails over (the consumer builds no transport from them).
      if (emailProviders.length > 1) outcomes.setEnv(ENV.emailProviders, emailProviders.join(','));
      if (smsProviders.length > 1) outcomes.setEnv(ENV.smsProviders, smsProviders.join(','));
      this.reconciler.function.setEnv(ENV.providerCircuit, circuitJson);
    }

    // --- operator console -----------------------------------------------------------------------------
    if (props.console !== false) {
      this.console = new OperatorConsole(this, 'Console', {
        ...(props.console ?? {}),
        ledger: this.tables.ledger,
        suppression: this.tables.suppression,
        intakeQueue: this.intake.queue,
        dlq: this.intake.dlq,
        accessLogsBucket: this.archive.accessLogsBucket,
        archive: { bucket: this.archive.bucket, digestKey: this.archive.digestKey },
        logRetention: props.logRetention,
        // Capabilities only: the console never sends, so it gets the transport settings, not the secret.
        transportEnv: (fn) => {
          fn.setEnv(ENV.emailTransport, props.email.transport)
            .setEnv(ENV.smsTransport, props.sms.transport)
            .setEnv(ENV.emailFrom, props.email.fromAddress)
            .setEnv(ENV.purposes, purposesJson);
          if (emailProviders.length > 1) fn.setEnv(ENV.emailProviders, emailProviders.join(','));
          if (smsProviders.length > 1) fn.setEnv(ENV.smsProviders, smsProviders.join(','));
          if (props.restBaseUrl) fn.setEnv(ENV.restBaseUrl, props.restBaseUrl);
          if (smsProviders.includes('twilio') && props.sms.senderId)
            fn.setEnv(ENV.smsOriginationIdentity, props.sms.senderId);
        },
      });
      // The named audit queries run in the archive's Athena workgroup.
      this.archive.grantAuditQueries(this.console.function);
    }

    // --- alarms -----------------------------------------------------------------------------------------
    if (props.alarmTopic) {
      this.alarmTopic = props.alarmTopic;
    } else {
      const topic = new sns.Topic(this, 'AlarmTopic', { masterKey: topicKey, enforceSSL: true });
      topic.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'CloudWatchAlarmsPublish',
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['sns:Publish'],
          resources: [topic.topicArn],
          conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
        }),
      );
      this.alarmTopic = topic;
    }
    this.alarms = new Alarms(this, 'Alarms', {
      topic: this.alarmTopic,
      intakeQueue: this.intake.queue,
      deadLetterQueues: {
        IntakeDlq: this.intake.dlq,
        EvidenceDlq: this.evidence.dlq,
        ArchiveFailures: this.archive.failureQueue,
        OutcomeEventsUndelivered: this.outcomeEvents.deadLetterQueue,
        OutcomeStreamFailures: this.outcomeEvents.streamFailures,
      },
      functions: {
        Dispatch: this.dispatcher.function.fn,
        Reconcile: this.reconciler.function.fn,
        Evidence: this.evidence.function.fn,
        Archive: this.archive.function.fn,
        ArchiveMaintenance: this.archive.maintenance.fn,
        Outcomes: this.outcomeEvents.function.fn,
      },
      archiver: this.archive.function.fn,
      reconcileStateMachine: this.reconciler.stateMachine,
      thresholds: props.alarmThresholds,
      circuitProviders: [
        ...(emailProviders.length > 1 ? emailProviders : []),
        ...(smsProviders.length > 1 ? smsProviders : []),
      ],
    });

    // --- service level objectives, burn-rate alarms, dashboard (on the outcomes function's metrics) ------
    this.serviceLevels = new ServiceLevels(this, 'ServiceLevels', {
      purposes: PurposeRegistry.withOverrides(props.purposes ?? []),
      purposesJson,
      archive: this.archive,
      topic: this.alarmTopic,
      queues: {
        'events not delivered': this.outcomeEvents.deadLetterQueue,
        'stream batches given up': this.outcomeEvents.streamFailures,
      },
      streamConsumer: this.outcomeEvents.function.fn,
      logRetention: props.logRetention,
    });
  }
}

const validate = (props: NotificationLedgerProps): void => {
  const problems: string[] = [];
  const emailProviders = emailProvidersOf(props);
  const smsProviders = smsProvidersOf(props);
  for (const [channel, list] of [
    ['email', emailProviders],
    ['sms', smsProviders],
  ] as const) {
    if (new Set<string>(list).size !== list.length)
      problems.push(`${channel}.failover must not repeat a provider (${list.join(', ')})`);
    if (list.includes('rest' as never) && list.includes('simulator' as never))
      problems.push(`${channel}: rest and simulator share restBaseUrl; fail over to one of them`);
  }
  if (props.providerCircuit !== undefined) {
    const circuit = providerCircuitSchema().safeParse(props.providerCircuit);
    if (!circuit.success)
      problems.push(
        `providerCircuit: ${circuit.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join(', ')}`,
      );
  }
  if (emailProviders.includes('ses') && !props.email.sesIdentity) {
    problems.push('email.sesIdentity is required with the ses transport');
  }
  if (smsProviders.includes('twilio') && !props.sms.senderId) {
    problems.push(
      'sms.senderId (a Twilio number or MG… Messaging Service SID) is required with the twilio transport',
    );
  }
  if (smsProviders.includes('sms-v2') && !props.sms.originationIdentityArn) {
    problems.push('sms.originationIdentityArn is required with the sms-v2 transport');
  }
  // The purposes' SMS countries become the protect configuration's rules: only documented destinations.
  if (smsProviders.includes('sms-v2')) problems.push(...unsupportedSmsCountries(props.purposes ?? []));
  for (const [channel, transport] of [
    ...emailProviders.map((t) => ['email', t] as const),
    ...smsProviders.map((t) => ['sms', t] as const),
  ]) {
    if (NEEDS_PROVIDER_SECRET.has(transport) && !props.providerSecret) {
      problems.push(`providerSecret is required: ${channel} uses the ${transport} transport`);
    }
  }
  // The simulator is a REST provider too (a test double speaking the same convention).
  const restLike = new Set<string>(['rest', 'simulator']);
  if ([...emailProviders, ...smsProviders].some((t) => restLike.has(t)) && !props.restBaseUrl) {
    problems.push('restBaseUrl is required with the rest and simulator transports');
  }
  const keyRetention = props.restKeyRetentionSeconds;
  if (
    keyRetention !== undefined &&
    (!Number.isInteger(keyRetention) || keyRetention < 120 || keyRetention > 30 * 86_400)
  ) {
    problems.push('restKeyRetentionSeconds must be an integer between 120 and 2592000 (30 days)');
  }
  const maxConcurrency = props.concurrency?.dispatcherMaxConcurrency;
  if (maxConcurrency !== undefined && (maxConcurrency < 2 || maxConcurrency > 1000)) {
    problems.push('concurrency.dispatcherMaxConcurrency must be between 2 and 1000');
  }
  const recordConcurrency = props.concurrency?.recordConcurrency;
  if (recordConcurrency !== undefined && (recordConcurrency < 1 || recordConcurrency > 50)) {
    problems.push('concurrency.recordConcurrency must be between 1 and 50');
  }
  const shards = props.attentionShards;
  if (shards !== undefined && (!Number.isInteger(shards) || shards < 1 || shards > ATTENTION_SHARDS.max)) {
    problems.push(`attentionShards must be an integer between 1 and ${ATTENTION_SHARDS.max}`);
  }
  if (props.leaseSeconds !== undefined && (props.leaseSeconds < 5 || props.leaseSeconds > 900)) {
    problems.push('leaseSeconds must be between 5 and 900');
  }
  // A lease that ends while its worker may still be waiting for the provider would let a redelivery mark
  // the row unknown under a live call (and a late answer would then race it).
  const minimumLease = INTAKE_QUEUE.dispatcherTimeoutSeconds + INTAKE_QUEUE.sendTimeoutSeconds;
  if (props.leaseSeconds !== undefined && props.leaseSeconds < minimumLease) {
    problems.push(
      `leaseSeconds must be at least the dispatcher timeout plus the send timeout (${INTAKE_QUEUE.dispatcherTimeoutSeconds} + ${INTAKE_QUEUE.sendTimeoutSeconds} = ${minimumLease})`,
    );
  }
  if (props.templatesDir !== undefined) {
    // A revision that would be refused at dispatch (unpublished, changed, undeclared variable) fails synth.
    const dir = resolve(props.templatesDir);
    if (!existsSync(dir)) problems.push(`templatesDir ${dir} does not exist`);
    else
      for (const issue of checkTemplates(dir))
        problems.push(`templatesDir: ${issue.where}: ${issue.message}`);
  }
  if (problems.length > 0) throw new Error(`NotificationLedger: ${problems.join('; ')}`);
};
