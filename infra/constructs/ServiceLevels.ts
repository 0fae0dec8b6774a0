import { Duration, Names, Stack } from 'aws-cdk-lib';
import * as applicationsignals from 'aws-cdk-lib/aws-applicationsignals';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as schedulerTargets from 'aws-cdk-lib/aws-scheduler-targets';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lib/config.js';
import { type PurposeRegistry, sloOf } from '../../lib/domain/purposes.js';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { SLO_METRIC } from '../../lib/slo/metrics.js';
import { burnRateThresholds, type LatencyObjective, type Slo } from '../../lib/slo/objectives.js';
import { acknowledgeWildcardResource } from '../nag.js';
import type { AuditArchive } from './AuditArchive.js';
import { SendproofFunction } from './SendproofFunction.js';

export interface ServiceLevelsProps {
  purposes: PurposeRegistry;
  purposesJson: string;
  archive: AuditArchive;
  topic: sns.ITopic;
  /** Queues whose depth the dashboard shows next to the SLIs (outcome events undelivered, …). */
  queues?: Record<string, sqs.IQueue>;
  /** The stream consumer the SLI metrics come from: an alarm says when it falls behind. */
  streamConsumer?: lambda.IFunction;
  logRetention?: logs.RetentionDays;
}

/** The SRE workbook's multi-window pairs: each long window with a short one (1/12) so an alert resets fast. */
export const BURN_WINDOWS = {
  fast: { long: Duration.hours(1), short: Duration.minutes(5) },
  slow: { long: Duration.hours(6), short: Duration.minutes(30) },
} as const;

type Objective = 'accepted' | 'delivered';
const SLI = {
  accepted: { decided: SLO_METRIC.acceptanceDecided, good: SLO_METRIC.acceptanceGood },
  delivered: { decided: SLO_METRIC.deliveryDecided, good: SLO_METRIC.deliveryGood },
} as const;

const metric = (metricName: string, purpose: string, period: Duration, statistic = 'Sum') =>
  new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { purpose, service: SERVICE_NAME },
    statistic,
    period,
  });

/** One metric of the SLO's own query language (CloudWatch MetricDataQuery, per purpose). */
const sloQuery = (id: string, metricName: string, purpose: string, period: number) => ({
  id,
  returnData: true,
  metricStat: {
    period,
    stat: 'Sum',
    metric: {
      namespace: METRICS_NAMESPACE,
      metricName,
      dimensions: [
        { name: 'purpose', value: purpose },
        { name: 'service', value: SERVICE_NAME },
      ],
    },
  },
});

/** Burn rate over one window: the share that missed, over the share the objective allows to miss. */
const burnRate = (
  objective: LatencyObjective,
  names: { decided: string; good: string },
  purpose: string,
  window: Duration,
) =>
  new cloudwatch.MathExpression({
    expression: `IF(decided > 0, (decided - good) / decided / ${(1 - objective.target).toPrecision(6)}, 0)`,
    usingMetrics: {
      decided: metric(names.decided, purpose, window),
      good: metric(names.good, purpose, window),
    },
    period: window,
    label: `burn rate ${window.toHumanString()}`,
  });

/**
 * The purposes' service level objectives in AWS, on the metrics the outcomes function derives from the
 * ledger stream (lib/slo/observations.ts) and the daily SLO audit derives from the archive (duplicates):
 *
 * - one CloudWatch Application Signals SLO per purpose and objective (AWS::ApplicationSignals::
 *   ServiceLevelObjective): request-based, good ÷ decided (duplicates: bad ÷ audited acceptances), over
 *   the purpose's rolling window, with 1 h and 6 h burn-rate configurations — Application Signals can
 *   take any CloudWatch metric as a request-based SLI, so it expresses these objectives as they are;
 * - multi-window burn-rate alarms (SRE workbook: page when 1 h and 5 min both burn 2 % of the window's
 *   budget per hour's share, ticket when 6 h and 30 min burn 5 %), as composite alarms on the same
 *   metrics, sending to the alarm topic;
 * - a dashboard with, per purpose, the SLIs, the budget left over the window, the latencies, and the
 *   instruments: time in each non-final state, terminal results per channel, suppression outcomes, the
 *   reconciler's oldest unknown and oldest non-final row, claim conflicts, duplicates, undelivered events.
 */
export class ServiceLevels extends Construct {
  readonly objectives: applicationsignals.CfnServiceLevelObjective[] = [];
  readonly burnAlarms: cloudwatch.CompositeAlarm[] = [];
  readonly duplicateAlarms: cloudwatch.Alarm[] = [];
  /** The outcome-events consumer is behind the ledger stream: callers hear late, the SLIs lag. */
  readonly consumerLag?: cloudwatch.Alarm;
  readonly dashboard: cloudwatch.Dashboard;
  /** Daily: the duplicate budget, counted in the archive (functions/slo-audit). */
  readonly audit: SendproofFunction;
  readonly auditSchedule: scheduler.Schedule;

  constructor(scope: Construct, id: string, props: ServiceLevelsProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const prefix = Names.uniqueResourceName(this, { maxLength: 60, separator: '-' });
    const action = new cwActions.SnsAction(props.topic);

    this.audit = new SendproofFunction(this, 'Audit', {
      entry: 'functions/slo-audit/index.ts',
      description: 'Counts messages accepted twice in the archive (Athena), daily, as SLO metrics',
      timeout: Duration.minutes(15),
      logRetention: props.logRetention,
    })
      .setEnv(ENV.purposes, props.purposesJson)
      .setEnv(ENV.archiveBucket, props.archive.bucket.bucketName);
    props.archive.grantAuditQueries(this.audit);
    this.auditSchedule = new scheduler.Schedule(this, 'AuditSchedule', {
      description: 'Sendproof SLO audit (duplicates), daily after midnight UTC',
      schedule: scheduler.ScheduleExpression.cron({ minute: '30', hour: '0' }),
      target: new schedulerTargets.LambdaInvoke(this.audit.fn, {
        input: scheduler.ScheduleTargetInput.fromObject({}),
        retryAttempts: 2,
      }),
    });
    acknowledgeWildcardResource(
      stack,
      `${this.audit.fn.functionArn}:*`,
      'EventBridge Scheduler may invoke the SLO audit function and its versions; nothing else.',
    );

    const widgets: cloudwatch.IWidget[][] = [];
    let longestWindow = 1;
    for (const purpose of props.purposes.names()) {
      const slo = sloOf(props.purposes.get(purpose));
      longestWindow = Math.max(longestWindow, slo.windowDays);
      const objectives: Array<[Objective, LatencyObjective]> = [['accepted', slo.accepted]];
      if (slo.delivered) objectives.push(['delivered', slo.delivered]);
      for (const [name, objective] of objectives) {
        this.objectives.push(this.latencySlo(`${prefix}-${purpose}-${name}`, purpose, name, objective, slo));
        this.burnAlarms.push(...this.burnRateAlarms(purpose, name, objective, slo, action));
      }
      this.objectives.push(this.duplicateSlo(`${prefix}-${purpose}-duplicates`, purpose, slo));
      this.duplicateAlarms.push(this.duplicateAlarm(purpose, slo, action));
      widgets.push(this.purposeRow(purpose, slo, objectives));
    }
    widgets.push(this.instruments(props.queues ?? {}));
    if (props.streamConsumer) {
      this.consumerLag = props.streamConsumer
        .metric('IteratorAge', { statistic: 'Maximum', period: Duration.minutes(5) })
        .createAlarm(this, 'ConsumerLag', {
          alarmDescription:
            'Outcome events (and the SLO metrics) lag the ledger stream by more than 5 minutes',
          threshold: Duration.minutes(5).toMilliseconds(),
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 2,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        });
      this.consumerLag.addAlarmAction(action);
    }
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.days(longestWindow),
      widgets,
    });
  }

  private latencySlo(name: string, purpose: string, objective: Objective, o: LatencyObjective, slo: Slo) {
    return new applicationsignals.CfnServiceLevelObjective(this, `Slo-${purpose}-${objective}`, {
      name,
      description: `${purpose}: ${o.target * 100} % ${objective} within ${o.withinSeconds} s of the request (Sendproof)`,
      requestBasedSli: {
        requestBasedSliMetric: {
          totalRequestCountMetric: [sloQuery('decided', SLI[objective].decided, purpose, 60)],
          monitoredRequestCountMetric: {
            goodCountMetric: [sloQuery('good', SLI[objective].good, purpose, 60)],
          },
        },
      },
      goal: {
        attainmentGoal: o.target * 100,
        warningThreshold: 50,
        interval: { rollingInterval: { duration: slo.windowDays, durationUnit: 'DAY' } },
      },
      burnRateConfigurations: [{ lookBackWindowMinutes: 60 }, { lookBackWindowMinutes: 360 }],
    });
  }

  private duplicateSlo(name: string, purpose: string, slo: Slo) {
    return new applicationsignals.CfnServiceLevelObjective(this, `Slo-${purpose}-duplicates`, {
      name,
      description: `${purpose}: at most 1 in ${slo.duplicates.atMostOneIn} messages accepted twice (Sendproof, daily archive audit)`,
      requestBasedSli: {
        requestBasedSliMetric: {
          totalRequestCountMetric: [sloQuery('audited', SLO_METRIC.auditedAcceptances, purpose, 3600)],
          monitoredRequestCountMetric: {
            badCountMetric: [sloQuery('twice', SLO_METRIC.duplicateAcceptances, purpose, 3600)],
          },
        },
      },
      goal: {
        attainmentGoal: (1 - 1 / slo.duplicates.atMostOneIn) * 100,
        warningThreshold: 50,
        interval: { rollingInterval: { duration: slo.windowDays, durationUnit: 'DAY' } },
      },
    });
  }

  private burnRateAlarms(
    purpose: string,
    objective: Objective,
    o: LatencyObjective,
    slo: Slo,
    action: cwActions.SnsAction,
  ) {
    const thresholds = burnRateThresholds(slo.windowDays);
    return (['fast', 'slow'] as const).map((speed) => {
      const windows = BURN_WINDOWS[speed];
      const component = (which: 'long' | 'short') =>
        burnRate(o, SLI[objective], purpose, windows[which]).createAlarm(
          this,
          `Burn-${purpose}-${objective}-${speed}-${which}`,
          {
            alarmDescription: `${purpose} ${objective}: burn rate over ${windows[which].toHumanString()} above ${thresholds[speed]}`,
            threshold: thresholds[speed],
            comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
          },
        );
      const composite = new cloudwatch.CompositeAlarm(this, `Burn-${purpose}-${objective}-${speed}`, {
        alarmDescription: `${purpose}: the ${objective} objective (${o.target * 100} % within ${o.withinSeconds} s) burns its ${slo.windowDays}-day error budget ${speed === 'fast' ? '2 % per hour (page)' : '5 % per 6 hours (ticket)'}`,
        alarmRule: cloudwatch.AlarmRule.allOf(component('long'), component('short')),
      });
      composite.addAlarmAction(action);
      return composite;
    });
  }

  private duplicateAlarm(purpose: string, slo: Slo, action: cwActions.SnsAction) {
    const day = Duration.days(1);
    const alarm = new cloudwatch.MathExpression({
      expression: `twice - audited / ${slo.duplicates.atMostOneIn}`,
      usingMetrics: {
        twice: metric(SLO_METRIC.duplicateAcceptances, purpose, day),
        audited: metric(SLO_METRIC.auditedAcceptances, purpose, day),
      },
      period: day,
      label: 'accepted twice beyond the budget',
    }).createAlarm(this, `Duplicates-${purpose}`, {
      alarmDescription: `${purpose}: more messages accepted twice yesterday than 1 in ${slo.duplicates.atMostOneIn} allows (multiple-acceptances)`,
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(action);
    return alarm;
  }

  private purposeRow(
    purpose: string,
    slo: Slo,
    objectives: Array<[Objective, LatencyObjective]>,
  ): cloudwatch.IWidget[] {
    const hour = Duration.hours(1);
    const sli = (objective: Objective) =>
      new cloudwatch.MathExpression({
        expression: `100 * ${objective}Good / ${objective}Decided`,
        usingMetrics: {
          [`${objective}Decided`]: metric(SLI[objective].decided, purpose, hour),
          [`${objective}Good`]: metric(SLI[objective].good, purpose, hour),
        },
        period: hour,
        label: `${objective} in time (%)`,
      });
    const budgetLeft = (objective: Objective, o: LatencyObjective) =>
      new cloudwatch.MathExpression({
        expression: `100 * (1 - (${objective}Decided - ${objective}Good) / ${objective}Decided / ${(1 - o.target).toPrecision(6)})`,
        usingMetrics: {
          [`${objective}Decided`]: metric(SLI[objective].decided, purpose, Duration.days(slo.windowDays)),
          [`${objective}Good`]: metric(SLI[objective].good, purpose, Duration.days(slo.windowDays)),
        },
        period: Duration.days(slo.windowDays),
        label: `${objective}: budget left (%)`,
      });
    const latency = (name: string, label: string) =>
      (['p50', 'p99'] as const).map(
        (stat) =>
          new cloudwatch.MathExpression({
            expression: `SEARCH('{${METRICS_NAMESPACE},channel,purpose,service} MetricName="${name}" purpose="${purpose}"', '${stat}', 300)`,
            usingMetrics: {},
            period: Duration.minutes(5),
            label: `${label} ${stat}`,
          }),
      );
    return [
      new cloudwatch.GraphWidget({
        title: `${purpose}: SLIs (objective ${objectives.map(([n, o]) => `${n} ${o.target * 100} % in ${o.withinSeconds} s`).join(', ')})`,
        left: objectives.map(([n]) => sli(n)),
        leftYAxis: { min: 0, max: 100 },
        leftAnnotations: objectives.map(([n, o]) => ({ value: o.target * 100, label: `${n} objective` })),
        width: 8,
      }),
      new cloudwatch.SingleValueWidget({
        title: `${purpose}: error budget left over ${slo.windowDays} days`,
        metrics: [
          ...objectives.map(([n, o]) => budgetLeft(n, o)),
          metric(SLO_METRIC.duplicateAcceptances, purpose, Duration.days(slo.windowDays)),
        ],
        setPeriodToTimeRange: true,
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: `${purpose}: request → accepted / delivered, ms`,
        left: [
          ...latency(SLO_METRIC.acceptLatency, 'accepted'),
          ...latency(SLO_METRIC.deliveryLatency, 'delivered'),
        ],
        width: 8,
      }),
    ];
  }

  private instruments(queues: Record<string, sqs.IQueue>): cloudwatch.IWidget[] {
    const search = (name: string, dims: string, stat: string, label: string) =>
      new cloudwatch.MathExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},${dims}} MetricName="${name}"', '${stat}', 300)`,
        usingMetrics: {},
        period: Duration.minutes(5),
        label,
      });
    const gauge = (name: string) =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: name,
        dimensionsMap: { service: SERVICE_NAME },
        statistic: 'Maximum',
        period: Duration.minutes(5),
      });
    return [
      new cloudwatch.GraphWidget({
        title: 'Time in each non-final state (p99, ms)',
        left: [search(SLO_METRIC.timeInState, 'channel,purpose,service,state', 'p99', '')],
        width: 6,
      }),
      new cloudwatch.GraphWidget({
        title: 'Terminal results per channel',
        left: [search(SLO_METRIC.terminalResults, 'channel,purpose,service,state', 'Sum', '')],
        stacked: true,
        width: 6,
      }),
      new cloudwatch.GraphWidget({
        title: 'Suppression outcomes; claim conflicts; accepted twice',
        left: [
          search(SLO_METRIC.suppressions, 'channel,purpose,reason,service', 'Sum', ''),
          new cloudwatch.Metric({
            namespace: METRICS_NAMESPACE,
            metricName: METRIC.claimConflicts,
            dimensionsMap: { service: SERVICE_NAME },
            statistic: 'Sum',
            period: Duration.minutes(5),
          }),
          search(SLO_METRIC.duplicateAcceptances, 'channel,purpose,service', 'Sum', ''),
        ],
        width: 6,
      }),
      new cloudwatch.GraphWidget({
        title:
          'Reconciler: oldest unknown, oldest non-final row (s); event feed unavailable; events not delivered',
        left: [
          gauge(METRIC.oldestUnknownAgeSeconds),
          gauge(METRIC.oldestNonTerminalAgeSeconds),
          // A provider event feed (pull evidence) or lookup that could not answer this run.
          new cloudwatch.Metric({
            namespace: METRICS_NAMESPACE,
            metricName: METRIC.lookupsUnavailable,
            dimensionsMap: { service: SERVICE_NAME },
            statistic: 'Sum',
            period: Duration.minutes(5),
          }),
        ],
        right: Object.entries(queues).map(([label, queue]) =>
          queue.metricApproximateNumberOfMessagesVisible({
            label,
            period: Duration.minutes(5),
            statistic: 'Maximum',
          }),
        ),
        width: 6,
      }),
    ];
  }
}
