import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { BREAKER_METRIC } from '../../lib/rate/SpendBreaker.js';
import { HOLD_METRIC } from '../../lib/rate/TransportHolds.js';
import { CIRCUIT_METRIC } from '../../lib/transports/health.js';

export interface AlarmThresholds {
  /** Oldest intent waiting on the intake queue. */
  queueOldestMessageAge?: Duration;
  /** Archiver stream lag; DynamoDB streams keep records 24 h, so alarm long before that. */
  archiverIteratorAge?: Duration;
  /** Oldest ledger row whose provider outcome is still unknown (reconciler metric). */
  oldestUnknownAge?: Duration;
  /** Oldest row the ledger still owns, in any non-terminal state (reconciler metric). */
  oldestNonTerminalAge?: Duration;
  /** Webhook requests refused (unsigned, forged, replayed) in 5 minutes above which someone is probing. */
  webhookRefused?: number;
  /** Provider events in 5 minutes refused: a label we did not make, or another message than the row's. */
  evidenceRefused?: number;
  /** Provider events in 5 minutes that match no claim of ours (a tag lost, another sender on the config set). */
  evidenceUnmatched?: number;
  /** Permanent bounces in 5 minutes (any channel, purpose): a list gone stale, or a template sent to typos. */
  hardBounces?: number;
  /** Complaints in 5 minutes: providers suspend senders whose complaint rate stays high. */
  complaints?: number;
}

export interface AlarmsProps {
  topic: sns.ITopic;
  intakeQueue: sqs.IQueue;
  /** Queues where anything at all means something was dropped: intake DLQ, evidence DLQ, archive failures. */
  deadLetterQueues: Record<string, sqs.IQueue>;
  functions: Record<string, lambda.IFunction>;
  archiver: lambda.IFunction;
  reconcileStateMachine: sfn.IStateMachine;
  thresholds?: AlarmThresholds;
  /**
   * Providers with a circuit (every provider of a channel that fails over, lib/transports/health.ts):
   * each gets an alarm on its circuit opening and one on rows failing over from it.
   */
  circuitProviders?: readonly string[];
}

export const DEFAULT_THRESHOLDS = {
  queueOldestMessageAge: Duration.minutes(15),
  archiverIteratorAge: Duration.hours(1),
  oldestUnknownAge: Duration.hours(6),
  oldestNonTerminalAge: Duration.hours(24),
  webhookRefused: 10,
  evidenceRefused: 0,
  evidenceUnmatched: 10,
  hardBounces: 5,
  complaints: 0,
} as const;

/**
 * The dimensions each evidence metric is emitted with (Powertools adds `service`). A Metrics Insights
 * query sums one metric over every combination of them: an alarm cannot SEARCH, and the dimension values
 * (provider, fact, purpose…) are not known at synth.
 */
export const EVIDENCE_METRIC_DIMENSIONS = {
  [METRIC.deliveryFacts]: ['channel', 'fact', 'purpose', 'service'],
  [METRIC.evidenceUnmatched]: ['service', 'source'],
  [METRIC.evidenceRefused]: ['reason', 'service', 'source'],
  [METRIC.webhookRefused]: ['provider', 'reason', 'service'],
} as const;

export const evidenceQuery = (metricName: keyof typeof EVIDENCE_METRIC_DIMENSIONS, where?: string): string =>
  `SELECT SUM(${metricName}) FROM SCHEMA("${METRICS_NAMESPACE}", ${EVIDENCE_METRIC_DIMENSIONS[metricName].join(', ')})${where ? ` WHERE ${where}` : ''}`;

const insights = (label: string, expression: string): cloudwatch.MathExpression =>
  new cloudwatch.MathExpression({ expression, label, period: Duration.minutes(5), usingMetrics: {} });

const sendproofMetric = (metricName: string, statistic: string): cloudwatch.Metric =>
  new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { service: SERVICE_NAME },
    statistic,
    period: Duration.minutes(5),
  });

/**
 * Every alarm that says "a claim may be stuck or lost", on one dashboard, each sending to one SNS topic.
 * Custom metrics use the names in lib/observability.ts, the same constants the functions emit with.
 */
export class Alarms extends Construct {
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: AlarmsProps) {
    super(scope, id);
    const thresholds = { ...DEFAULT_THRESHOLDS, ...props.thresholds };
    const action = new cwActions.SnsAction(props.topic);
    const add = (alarmId: string, options: cloudwatch.AlarmProps): cloudwatch.Alarm => {
      const alarm = new cloudwatch.Alarm(this, alarmId, options);
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
      this.alarms.push(alarm);
      return alarm;
    };

    const dlqAlarms = Object.entries(props.deadLetterQueues).map(([name, queue]) =>
      add(`${name}NotEmpty`, {
        alarmDescription: `${name}: messages were parked and need an operator`,
        metric: queue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
    const queueAge = add('IntakeOldestMessageAge', {
      alarmDescription: 'Intents are waiting on the intake queue longer than expected',
      metric: props.intakeQueue.metricApproximateAgeOfOldestMessage({
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
      threshold: thresholds.queueOldestMessageAge.toSeconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const iteratorAge = add('ArchiverIteratorAge', {
      alarmDescription: 'The archive is falling behind the ledger stream (records expire after 24 h)',
      metric: props.archiver.metric('IteratorAge', { period: Duration.minutes(5), statistic: 'Maximum' }),
      threshold: thresholds.archiverIteratorAge.toMilliseconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const oldestUnknown = add('OldestUnknownAge', {
      alarmDescription: 'A send with an unknown outcome has waited too long for evidence',
      metric: sendproofMetric(METRIC.oldestUnknownAgeSeconds, 'Maximum'),
      threshold: thresholds.oldestUnknownAge.toSeconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    add('OldestNonTerminalAge', {
      alarmDescription: 'A ledger row has not reached a final state for too long (any non-terminal state)',
      metric: sendproofMetric(METRIC.oldestNonTerminalAgeSeconds, 'Maximum'),
      threshold: thresholds.oldestNonTerminalAge.toSeconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    add('StalledRows', {
      alarmDescription:
        'The sweep could not resume a row (nothing sealed, or resumed too often): an operator decides',
      metric: sendproofMetric(METRIC.stalled, 'Sum'),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    add('LastReceiveSealFailed', {
      alarmDescription:
        'Sealing an intent on its last receive failed: if that handling died, its claimed/dispatching row is owned only by its message on the intake DLQ (redrive it)',
      metric: sendproofMetric(METRIC.sealFailures, 'Sum'),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    // --- evidence: what providers said after acceptance, and who knocked on the webhook ---------------
    const evidenceAlarm = (alarmId: string, alarmDescription: string, query: string, threshold: number) =>
      add(alarmId, {
        alarmDescription,
        metric: insights(alarmId, query),
        threshold,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    const evidenceAlarms = [
      evidenceAlarm(
        'WebhookRefused',
        'Evidence endpoint refused unsigned, forged or replayed webhooks (401): a probe, or a rotated secret',
        evidenceQuery(METRIC.webhookRefused),
        thresholds.webhookRefused,
      ),
      evidenceAlarm(
        'EvidenceRefused',
        "Signed provider events refused: the label is not this deployment's, or the event names another message than the row (a forged or replayed label)",
        evidenceQuery(METRIC.evidenceRefused),
        thresholds.evidenceRefused,
      ),
      evidenceAlarm(
        'EvidenceUnmatched',
        'Provider events carry no key hash of ours: a lost tag, or another sender on the configuration set',
        evidenceQuery(METRIC.evidenceUnmatched),
        thresholds.evidenceUnmatched,
      ),
      evidenceAlarm(
        'HardBounces',
        'Permanent bounces after acceptance (recipients now suppressed): check the addresses being sent to',
        evidenceQuery(METRIC.deliveryFacts, "fact = 'bounced_permanent'"),
        thresholds.hardBounces,
      ),
      evidenceAlarm(
        'Complaints',
        'Recipients marked notifications as spam (recipients now suppressed): providers suspend on a high rate',
        evidenceQuery(METRIC.deliveryFacts, "fact = 'complained'"),
        thresholds.complaints,
      ),
    ];
    add('SmsSpendBreakerOpened', {
      alarmDescription:
        'An SMS spend breaker opened (a purpose sent more SMS to one country than its threshold): possible SMS pumping; the log names the country, `sendproof breaker reset` closes it',
      metric: sendproofMetric(BREAKER_METRIC.opened, 'Sum'),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    add('TransportHeld', {
      alarmDescription:
        'A transport is held at the provider (SES sending paused or its daily quota, an SMS spend limit, a temporary block): its rows wait in retry_wait (transport_hold), nothing is rejected; `sendproof stats` shows the hold and its next probe',
      metric: sendproofMetric(HOLD_METRIC.rows, 'Sum'),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    // Dimension `provider` (+ Powertools' `service`), as lib/transports/health.ts and the dispatcher emit them.
    for (const provider of props.circuitProviders ?? []) {
      const id = provider.replace(/(^|-)([a-z0-9])/g, (_m, _d, c: string) => c.toUpperCase());
      const providerMetric = (metricName: string) =>
        new cloudwatch.Metric({
          namespace: METRICS_NAMESPACE,
          metricName,
          dimensionsMap: { service: SERVICE_NAME, provider },
          statistic: 'Sum',
          period: Duration.minutes(5),
        });
      add(`ProviderCircuitOpen${id}`, {
        alarmDescription: `The ${provider} circuit opened (5xx or never-left answers over the threshold): rows skip ${provider} until a probe succeeds; \`sendproof stats\` shows the circuit`,
        metric: providerMetric(CIRCUIT_METRIC.opened),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      add(`ProviderFailovers${id}`, {
        alarmDescription: `Rows failed over from ${provider} to the next provider (a provider-caused refusal, a request that never left, or its open circuit); \`sendproof explain\` shows why`,
        metric: providerMetric(CIRCUIT_METRIC.failovers),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    const quarantined = add('QuarantinedRows', {
      alarmDescription: 'Ledger rows are quarantined and wait for a human decision',
      metric: sendproofMetric(METRIC.quarantinedRows, 'Maximum'),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const reconcileFailed = add('ReconcileExecutionsFailed', {
      alarmDescription: 'A reconcile run failed, timed out or was aborted',
      metric: new cloudwatch.MathExpression({
        expression: 'failed + timedOut + aborted',
        label: 'Reconcile executions not succeeded',
        period: Duration.minutes(5),
        usingMetrics: {
          failed: props.reconcileStateMachine.metricFailed({ statistic: 'Sum' }),
          timedOut: props.reconcileStateMachine.metricTimedOut({ statistic: 'Sum' }),
          aborted: props.reconcileStateMachine.metricAborted({ statistic: 'Sum' }),
        },
      }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const functionAlarms = Object.entries(props.functions).flatMap(([name, fn]) => [
      add(`${name}Errors`, {
        alarmDescription: `${name} function invocations failed`,
        metric: fn.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      add(`${name}Throttles`, {
        alarmDescription: `${name} function invocations were throttled`,
        metric: fn.metricThrottles({ period: Duration.minutes(5), statistic: 'Sum' }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    ]);

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(6),
    });
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Sendproof alarms',
        alarms: this.alarms,
        width: 24,
        height: 4,
      }),
    );
    const graph = (alarm: cloudwatch.Alarm) =>
      new cloudwatch.AlarmWidget({ alarm, title: alarm.node.id, width: 8 });
    this.dashboard.addWidgets(...[queueAge, iteratorAge, oldestUnknown].map(graph));
    this.dashboard.addWidgets(...[quarantined, reconcileFailed, ...dlqAlarms].map(graph));
    this.dashboard.addWidgets(...evidenceAlarms.map(graph));
    this.dashboard.addWidgets(...functionAlarms.map(graph));
  }
}
