import { Duration } from 'aws-cdk-lib';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as logsLib from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as schedulerTargets from 'aws-cdk-lib/aws-scheduler-targets';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { acknowledge, acknowledgeWildcardResource } from '../nag.js';
import { SendproofFunction, tracingOn } from './SendproofFunction.js';

export interface ReconcilerWorkflowProps {
  schedule: scheduler.ScheduleExpression;
  /** Pages one execution may process before it stops and leaves the rest to the next schedule. */
  maxPagesPerRun: number;
  logRetention?: logs.RetentionDays;
}

/** Lambda errors that mean "the call did not run or was throttled", never "the reconcile page failed". */
export const RECONCILE_RETRY_ERRORS = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.TooManyRequestsException',
];

/**
 * EventBridge Scheduler → Step Functions → reconcile, one page per invocation.
 *
 *   Begin ─▶ ReconcilePage ─▶ MorePages? ── hasMore = false ──────────────▶ Done
 *                 ▲                │
 *                 │                ├─ loop ≥ maxPagesPerRun - 1 ─▶ ContinuesNextSchedule ─▶ Paused
 *                 └── NextPage ◀───┘ (otherwise: pass the cursor, loop + 1)
 *
 * The reconcile function's contract: input `{ cursor?, restart? }`, output `{ processed, resolved,
 * quarantined, cursor?, hasMore }`. The bound keeps one execution short. Scheduler inputs are static, so
 * the position crosses runs through the ledger: the function saves every page's cursor in the item
 * `reconcile#cursor`, and the first page of the next run (input `{}`) resumes from it; a run that reads
 * to the end clears it, so the following run starts again at the oldest row (lib/reconcile/RunCursor.ts).
 */
export class ReconcilerWorkflow extends Construct {
  readonly function: SendproofFunction;
  readonly stateMachine: sfn.StateMachine;
  readonly schedule: scheduler.Schedule;

  constructor(scope: Construct, id: string, props: ReconcilerWorkflowProps) {
    super(scope, id);
    if (!Number.isInteger(props.maxPagesPerRun) || props.maxPagesPerRun < 1) {
      throw new Error(`maxPagesPerRun must be a positive integer, got ${props.maxPagesPerRun}`);
    }
    this.function = new SendproofFunction(this, 'Reconcile', {
      entry: 'functions/reconcile/index.ts',
      description: 'Resolves or quarantines ledger rows whose provider outcome is unknown',
      timeout: Duration.minutes(2),
      logRetention: props.logRetention,
    });

    const begin = new sfn.Pass(this, 'Begin', {
      comment: 'Keep the caller input (an optional cursor) as the first request; count pages from 0.',
      parameters: { 'request.$': '$', loop: 0 },
    });
    const reconcilePage = new tasks.LambdaInvoke(this, 'ReconcilePage', {
      lambdaFunction: this.function.fn,
      // The function sees only `request` ({ cursor? }); its whole response lands in `page`. (A payload
      // built with TaskInput.fromJsonPathAt would render an invalid string `Parameters` here.)
      inputPath: '$.request',
      payloadResponseOnly: true,
      resultPath: '$.page',
      // The retry below is explicit, so the policy is visible here and in the tests.
      retryOnServiceExceptions: false,
    });
    reconcilePage.addRetry({
      errors: RECONCILE_RETRY_ERRORS,
      interval: Duration.seconds(2),
      backoffRate: 2,
      maxAttempts: 6,
      jitterStrategy: sfn.JitterType.FULL,
    });
    const nextPage = new sfn.Pass(this, 'NextPage', {
      parameters: { request: { 'cursor.$': '$.page.cursor' }, 'loop.$': 'States.MathAdd($.loop, 1)' },
    });
    const done = new sfn.Succeed(this, 'Done', { comment: 'No unknown rows left to look at.' });
    const continues = new sfn.Pass(this, 'ContinuesNextSchedule', {
      parameters: {
        status: 'continues next schedule',
        'pages.$': 'States.MathAdd($.loop, 1)',
        'cursor.$': '$.page.cursor',
      },
    }).next(
      new sfn.Succeed(this, 'Paused', {
        comment: 'Page budget spent; the next schedule resumes from the cursor saved in reconcile#cursor.',
      }),
    );

    const definition = begin.next(reconcilePage).next(
      new sfn.Choice(this, 'MorePages?')
        .when(sfn.Condition.booleanEquals('$.page.hasMore', false), done)
        .when(sfn.Condition.numberGreaterThanEquals('$.loop', props.maxPagesPerRun - 1), continues)
        .otherwise(nextPage.next(reconcilePage)),
    );

    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      definitionBody: sfn.DefinitionBody.fromChainable(definition),
      stateMachineType: sfn.StateMachineType.STANDARD,
      timeout: Duration.minutes(30),
      tracingEnabled: tracingOn(this),
      logs: {
        destination: new logsLib.LogGroup(this, 'ExecutionLogs', {
          retention: props.logRetention ?? logsLib.RetentionDays.THREE_MONTHS,
        }),
        level: sfn.LogLevel.ALL,
        // Page outputs are counts and an opaque cursor, but keep execution data out of logs by default.
        includeExecutionData: false,
      },
    });

    this.schedule = new scheduler.Schedule(this, 'Schedule', {
      description: 'Starts a Sendproof reconcile run',
      schedule: props.schedule,
      target: new schedulerTargets.StepFunctionsStartExecution(this.stateMachine, {
        input: scheduler.ScheduleTargetInput.fromObject({}),
        retryAttempts: 2,
      }),
    });

    acknowledge(
      this.stateMachine,
      'AwsSolutions-IAM5[Resource::*]',
      'CloudWatch Logs log-delivery and X-Ray actions used by Step Functions support no resource-level permissions.',
    );
    acknowledgeWildcardResource(
      this.stateMachine,
      `${this.function.fn.functionArn}:*`,
      'lambda:InvokeFunction on <arn>:* covers the versions and aliases of the one reconcile function, nothing else.',
    );
  }
}
