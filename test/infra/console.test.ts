import { Match } from 'aws-cdk-lib/assertions';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import { describe, expect, it } from 'vitest';
import { ENV } from '../../lib/config.js';
import { actionsOf, SES_AND_SMS, statementsOf, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;

describe('operator console infrastructure', () => {
  it(
    'puts the console API behind a Cognito JWT authorizer on every route, with viewer and operator groups',
    () => {
      const { stack, template } = synthStack(SES_AND_SMS);
      const c = stack.ledger.console!;
      template.resourceCountIs('AWS::Cognito::UserPool', 1);
      template.hasResourceProperties('AWS::Cognito::UserPool', {
        MfaConfiguration: 'ON',
        AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      });
      for (const group of ['viewer', 'operator'])
        template.hasResourceProperties('AWS::Cognito::UserPoolGroup', { GroupName: group });
      template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        AuthorizerType: 'JWT',
        IdentitySource: ['$request.header.Authorization'],
        JwtConfiguration: {
          Audience: [{ Ref: stack.getLogicalId(c.userPoolClient.node.defaultChild as never) }],
          Issuer: Match.objectLike({ 'Fn::Join': Match.anyValue() }),
        },
      });
      const routes = template.findResources('AWS::ApiGatewayV2::Route');
      expect(
        Object.values(routes)
          .map((r) => r.Properties.RouteKey)
          .sort(),
      ).toEqual(['GET /api/{proxy+}', 'POST /api/{proxy+}']);
      for (const route of Object.values(routes)) expect(route.Properties.AuthorizationType).toBe('JWT');
      // A stage throttle on top of the per-principal decision limit, and access logs.
      template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: '$default',
        DefaultRouteSettings: { ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 },
        AccessLogSettings: Match.objectLike({ DestinationArn: Match.anyValue() }),
      });
      // The page client gets tokens only from the hosted UI, back to the console's own CloudFront URL.
      template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
        GenerateSecret: false,
        AllowedOAuthFlows: ['implicit'],
        CallbackURLs: [Match.objectLike({ 'Fn::Join': Match.anyValue() })],
      });
    },
    SYNTH_TIMEOUT,
  );

  it(
    'serves the page from a private bucket through CloudFront with origin access control and a strict CSP',
    () => {
      const { stack, template } = synthStack(SES_AND_SMS);
      const bucketId = stack.getLogicalId(stack.ledger.console!.bucket.node.defaultChild as never);
      template.hasResourceProperties('AWS::S3::Bucket', {
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
      });
      template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
      template.hasResourceProperties('AWS::CloudFront::Distribution', {
        DistributionConfig: Match.objectLike({
          DefaultRootObject: 'index.html',
          Origins: [
            Match.objectLike({
              OriginAccessControlId: Match.anyValue(),
              S3OriginConfig: { OriginAccessIdentity: '' },
            }),
          ],
          DefaultCacheBehavior: Match.objectLike({ ViewerProtocolPolicy: 'redirect-to-https' }),
        }),
      });
      // Only CloudFront (this distribution) may read the page bucket.
      const policies = template.findResources('AWS::S3::BucketPolicy', {
        Properties: { Bucket: { Ref: bucketId } },
      });
      const statements = Object.values(policies).flatMap((p) => p.Properties.PolicyDocument.Statement);
      const reads = statements.filter((s: { Effect: string; Action: unknown }) =>
        JSON.stringify(s.Action).includes('s3:GetObject'),
      );
      expect(reads).toHaveLength(1);
      expect(reads[0].Principal).toEqual({ Service: 'cloudfront.amazonaws.com' });
      expect(JSON.stringify(reads[0].Condition)).toContain('AWS:SourceArn');
      const headers = template.findResources('AWS::CloudFront::ResponseHeadersPolicy');
      const csp = JSON.stringify(Object.values(headers)[0]);
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
    },
    SYNTH_TIMEOUT,
  );

  it(
    'gives the console function exactly the access it uses',
    () => {
      const { stack, template } = synthStack(SES_AND_SMS);
      const actions = actionsOf(statementsOf(stack, template, stack.ledger.console!.function.role));
      expect(actions).toEqual(
        expect.arrayContaining([
          'dynamodb:GetItem',
          'dynamodb:UpdateItem',
          'dynamodb:Scan',
          'sqs:SendMessage',
        ]),
      );
      expect(actions.filter((a) => a.startsWith('secretsmanager:'))).toEqual([]);
      expect(actions.filter((a) => a.startsWith('ses:') || a.startsWith('sms-voice:'))).toEqual([]);
      expect(actions).not.toContain('dynamodb:DeleteItem');
    },
    SYNTH_TIMEOUT,
  );

  it(
    'grants the console exactly the actions its routes call, and reads the export bundle from the archive bucket and KMS',
    () => {
      const { stack, template } = synthStack(SES_AND_SMS);
      const { archive } = stack.ledger;
      const fn = stack.ledger.console!.function;
      const statements = statementsOf(stack, template, fn.role);
      const resolved = (value: unknown) => JSON.stringify(stack.resolve(value));
      // Every action, and nothing more: ledger reads and decision writes, the overview's scans, the
      // intake queue (resend), the DLQ depth, the Athena queries, the export bundle, the logs.
      expect(actionsOf(statements)).toMatchInlineSnapshot(`
        [
          "athena:GetQueryExecution",
          "athena:GetQueryResults",
          "athena:StartQueryExecution",
          "athena:StopQueryExecution",
          "dynamodb:BatchGetItem",
          "dynamodb:GetItem",
          "dynamodb:PutItem",
          "dynamodb:Query",
          "dynamodb:Scan",
          "dynamodb:UpdateItem",
          "glue:GetDatabase",
          "glue:GetPartitions",
          "glue:GetTable",
          "kms:GetPublicKey",
          "logs:CreateLogStream",
          "logs:PutLogEvents",
          "s3:AbortMultipartUpload",
          "s3:GetBucketLocation",
          "s3:GetObject",
          "s3:ListBucket",
          "s3:ListBucketMultipartUploads",
          "s3:ListMultipartUploadParts",
          "s3:PutObject",
          "sqs:GetQueueAttributes",
          "sqs:SendMessage",
          "xray:PutTelemetryRecords",
          "xray:PutTraceSegments",
        ]
      `);
      const bySid = (sid: string) => statements.find((s) => s.Sid === sid);
      // The export bundle: list only under transitions/ and digests/, read those objects, the key's public half.
      expect(bySid('ExportBundleList')).toMatchObject({
        Action: ['s3:ListBucket'],
        Condition: { StringLike: { 's3:prefix': ['transitions/*', 'digests/*'] } },
      });
      expect(resolved(bySid('ExportBundleList')?.Resource)).toBe(resolved(archive.bucket.bucketArn));
      expect(bySid('ExportBundleRead')?.Action).toEqual(['s3:GetObject']);
      const read = resolved(bySid('ExportBundleRead')?.Resource);
      expect(read).toContain('/transitions/*');
      expect(read).toContain('/digests/*');
      expect(bySid('ExportBundleKey')?.Action).toEqual(['kms:GetPublicKey']);
      expect(resolved(bySid('ExportBundleKey')?.Resource)).toBe(resolved(archive.digestKey.keyArn));
      // Never a signature, a decryption or an archive write from the console.
      const kmsActions = actionsOf(statements).filter((a) => a.startsWith('kms:'));
      expect(kmsActions).toEqual(['kms:GetPublicKey']);
      const env = template.toJSON().Resources[stack.getLogicalId(fn.fn.node.defaultChild as never)].Properties
        .Environment.Variables as Record<string, unknown>;
      expect(env[ENV.archiveBucket]).toEqual(stack.resolve(archive.bucket.bucketName));
      expect(env[ENV.digestKeyId]).toEqual(stack.resolve(archive.digestKey.keyArn));
    },
    SYNTH_TIMEOUT,
  );

  it(
    "runs the named audit queries in the archive's Athena workgroup: its names as settings, grants on exactly it",
    () => {
      const { stack, template } = synthStack(SES_AND_SMS);
      const { archive } = stack.ledger;
      const fn = stack.ledger.console!.function;
      const statements = statementsOf(stack, template, fn.role);
      const bySid = (sid: string) => statements.find((s) => s.Sid === sid);
      const env = template.toJSON().Resources[stack.getLogicalId(fn.fn.node.defaultChild as never)].Properties
        .Environment.Variables as Record<string, unknown>;
      const resolved = (value: unknown) => JSON.stringify(stack.resolve(value));
      // Settings: the workgroup (Ref of the CfnWorkGroup) and the Glue database name.
      expect(env[ENV.athenaWorkGroup]).toEqual(stack.resolve(archive.workGroup.ref));
      expect(env[ENV.athenaDatabase]).toBe(archive.databaseName);
      // Athena: the four query calls, on this workgroup only.
      expect(bySid('AuditQueriesAthena')?.Action).toEqual([
        'athena:StartQueryExecution',
        'athena:GetQueryExecution',
        'athena:GetQueryResults',
        'athena:StopQueryExecution',
      ]);
      expect(JSON.stringify(bySid('AuditQueriesAthena')?.Resource)).toContain(':workgroup/');
      expect(JSON.stringify(bySid('AuditQueriesAthena')?.Resource)).toContain(
        resolved(archive.workGroup.ref).slice(1, -1),
      );
      // Glue: this database's catalog entries; S3: read the archive, write only query results.
      expect(JSON.stringify(bySid('AuditQueriesCatalog')?.Resource)).toContain(
        `${archive.databaseName}/transitions`,
      );
      expect(bySid('AuditQueriesArchiveRead')?.Action).toEqual(['s3:GetObject']);
      expect(resolved(bySid('AuditQueriesArchiveRead')?.Resource)).toContain('/transitions/*');
      expect(resolved(bySid('AuditQueriesResults')?.Resource)).toContain(
        resolved(archive.resultsBucket.bucketArn).slice(1, -1),
      );
      const actions = actionsOf(statements);
      for (const never of [
        's3:DeleteObject',
        's3:PutObjectRetention',
        'athena:DeleteWorkGroup',
        'glue:UpdateTable',
      ])
        expect(actions).not.toContain(never);
      // The archive bucket is never a write target for the console.
      const archiveWrites = statements.filter(
        (s) =>
          (s.Action as string[]).includes('s3:PutObject') &&
          resolved(s.Resource).includes(resolved(archive.bucket.bucketArn).slice(1, -1)),
      );
      expect(archiveWrites).toEqual([]);
    },
    SYNTH_TIMEOUT,
  );

  it(
    'uses a user pool passed in instead of creating one, and can be left out',
    () => {
      const { template } = synthStack((scope) => ({
        ...SES_AND_SMS,
        console: {
          userPool: cognito.UserPool.fromUserPoolId(scope, 'Pool', 'eu-west-1_AbCdEf123'),
          userPoolDomain: 'acme-ops.auth.eu-west-1.amazoncognito.com',
        },
      }));
      template.resourceCountIs('AWS::Cognito::UserPool', 0);
      template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 1);
      const none = synthStack({ ...SES_AND_SMS, console: false }).template;
      none.resourceCountIs('AWS::ApiGatewayV2::Api', 0);
      none.resourceCountIs('AWS::CloudFront::Distribution', 0);
    },
    SYNTH_TIMEOUT,
  );
});
