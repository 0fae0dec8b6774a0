import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { SES_AND_SMS, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;

/**
 * cdk-nag 3 is a CDK policy-validation plugin: it reports violations in a validation report instead of
 * annotations. `validateScope` runs the AwsSolutions pack over the stack and returns that report; the
 * Annotations check below stays to catch any error CDK itself attaches.
 */
describe('cdk-nag AwsSolutions', () => {
  it(
    'finds no unacknowledged AwsSolutions violation in the full stack',
    () => {
      // Prepare
      const { app, stack } = synthStack(SES_AND_SMS);
      // Act
      const report = new AwsSolutionsChecks(app).validateScope(stack);
      const errors = Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'));
      // Assess
      expect(report.violations.map((v) => v.ruleName)).toEqual([]);
      expect(report.success).toBe(true);
      expect(errors).toEqual([]);
    },
    SYNTH_TIMEOUT,
  );

  it(
    'still reports a violation that nobody acknowledged (the check is live)',
    () => {
      // Prepare
      const { app, stack } = synthStack(SES_AND_SMS);
      new s3.Bucket(stack, 'UnloggedBucket');
      // Act
      const report = new AwsSolutionsChecks(app).validateScope(stack);
      // Assess
      expect(report.violations.map((v) => v.ruleName)).toEqual(
        expect.arrayContaining(['AwsSolutions-S1', 'AwsSolutions-S10']),
      );
    },
    SYNTH_TIMEOUT,
  );

  it(
    'finds no violation with third-party transports, an imported provider secret and attachments',
    () => {
      // Prepare
      const { app, stack } = synthStack((scope) => ({
        email: { transport: 'resend', fromAddress: 'no-reply@example.com' },
        sms: { transport: 'twilio', senderId: '+15555550100' },
        providerSecret: importedSecret(scope),
        attachments: {
          bucket: s3.Bucket.fromBucketName(scope, 'Attachments', 'acme-attachments'),
          prefix: 'out/',
        },
      }));
      // Act
      const report = new AwsSolutionsChecks(app).validateScope(stack);
      // Assess
      expect(report.violations.map((v) => v.ruleName)).toEqual([]);
    },
    SYNTH_TIMEOUT,
  );
});

import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';

const importedSecret = (scope: Construct) =>
  secretsmanager.Secret.fromSecretCompleteArn(
    scope,
    'Provider',
    'arn:aws:secretsmanager:eu-west-1:111122223333:secret:sendproof/providers-AbCdEf',
  );
