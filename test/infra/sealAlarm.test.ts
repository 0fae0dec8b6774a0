import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { describe, expect, it } from 'vitest';
import { Alarms } from '../../infra/constructs/Alarms.js';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';

describe('the alarm on the bound of the last-receive seal (issue 26 item 10a)', () => {
  it('alarms on any LastReceiveSealFailures the dispatcher counts, to the alarm topic', () => {
    // Prepare
    const stack = new Stack(new App(), 'Alarms');
    const arn = 'arn:aws:lambda:us-east-1:000000000000:function:f';
    // Act
    new Alarms(stack, 'Alarms', {
      topic: new sns.Topic(stack, 'Topic'),
      intakeQueue: new sqs.Queue(stack, 'Intake'),
      deadLetterQueues: { IntakeDlq: new sqs.Queue(stack, 'Dlq') },
      functions: { Dispatch: lambda.Function.fromFunctionArn(stack, 'Fn', arn) },
      archiver: lambda.Function.fromFunctionArn(stack, 'Archiver', arn),
      reconcileStateMachine: sfn.StateMachine.fromStateMachineArn(
        stack,
        'Sm',
        'arn:aws:states:us-east-1:000000000000:stateMachine:r',
      ),
    });
    // Assess
    const alarms = Object.values(Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm')).filter(
      (a) => a.Properties.MetricName === METRIC.sealFailures,
    );
    expect(alarms).toHaveLength(1);
    expect(alarms[0]?.Properties).toMatchObject({
      Namespace: METRICS_NAMESPACE,
      Dimensions: [{ Name: 'service', Value: SERVICE_NAME }],
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });
});
