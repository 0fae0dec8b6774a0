import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DIGEST_PREFIX } from '../../lib/archive/digest.js';
import { ARCHIVE_PREFIX } from '../../lib/archive/schema.js';
import { ENV } from '../../lib/config.js';
import { contentSecurityPolicy } from '../../lib/console/staticFiles.js';
import { acknowledge, acknowledgeWildcardResource } from '../nag.js';
import { SendproofFunction } from './SendproofFunction.js';

/** The Cognito groups the console maps to its roles (lib/console/auth.ts). */
export const CONSOLE_GROUPS = { viewer: 'viewer', operator: 'operator' } as const;

export interface OperatorConsoleProps {
  ledger: dynamodb.ITable;
  suppression: dynamodb.ITable;
  intakeQueue: sqs.IQueue;
  dlq: sqs.IQueue;
  /**
   * The compliance archive, for the timeline's export bundle: its objects and digests are read from the
   * bucket and the digest key's public half from KMS. Absent: the console offers no export.
   */
  archive?: { bucket: s3.IBucket; digestKey: kms.IKey };
  /** Access logs of the page bucket and the distribution go here. */
  accessLogsBucket: s3.IBucket;
  /** An existing user pool (it must have `viewer` and `operator` groups). Absent: one is created. */
  userPool?: cognito.IUserPool;
  /** Hosted UI domain prefix for a created user pool. Default `sendproof-<account>`. */
  domainPrefix?: string;
  /** Cognito hosted UI domain (`<prefix>.auth.<region>.amazoncognito.com`) when `userPool` is passed in. */
  userPoolDomain?: string;
  /** Decision calls and reads, per second, across the API (the stage throttle). Default 10, burst 20. */
  rateLimitPerSecond?: number;
  logRetention?: logs.RetentionDays;
  /** Environment the transports need to be built (capabilities are shown per row). */
  transportEnv: (fn: SendproofFunction) => void;
}

/**
 * The operator console in AWS: the console Lambda (lib/console, the same handler as the local server)
 * behind an API Gateway HTTP API with a Cognito JWT authorizer, and the page's static files in a private
 * S3 bucket served by CloudFront through origin access control. The page signs in with Cognito's hosted
 * UI and calls the API with the access token in the Authorization header (no cookies).
 */
export class OperatorConsole extends Construct {
  readonly function: SendproofFunction;
  readonly api: apigwv2.HttpApi;
  readonly userPool: cognito.IUserPool;
  readonly userPoolClient: cognito.UserPoolClient;
  readonly bucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  readonly hostedUiDomain: string;

  constructor(scope: Construct, id: string, props: OperatorConsoleProps) {
    super(scope, id);
    const stack = Stack.of(this);

    // --- the page: private bucket, CloudFront with OAC --------------------------------------------------
    this.bucket = new s3.Bucket(this, 'Page', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      serverAccessLogsBucket: props.accessLogsBucket,
      serverAccessLogsPrefix: 'console-page/',
      removalPolicy: RemovalPolicy.DESTROY,
      autoDeleteObjects: false,
    });

    // --- identity: Cognito user pool with the two groups ------------------------------------------------
    let domain: string;
    if (props.userPool) {
      this.userPool = props.userPool;
      if (!props.userPoolDomain)
        throw new Error('OperatorConsole: userPoolDomain is required with an imported userPool');
      domain = props.userPoolDomain;
    } else {
      const pool = new cognito.UserPool(this, 'Users', {
        selfSignUpEnabled: false,
        signInAliases: { username: true, email: true },
        passwordPolicy: {
          minLength: 14,
          requireDigits: true,
          requireLowercase: true,
          requireUppercase: true,
          requireSymbols: true,
          tempPasswordValidity: Duration.days(3),
        },
        mfa: cognito.Mfa.REQUIRED,
        mfaSecondFactor: { otp: true, sms: false },
        featurePlan: cognito.FeaturePlan.PLUS,
        standardThreatProtectionMode: cognito.StandardThreatProtectionMode.FULL_FUNCTION,
        accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
        removalPolicy: RemovalPolicy.RETAIN,
      });
      for (const group of Object.values(CONSOLE_GROUPS))
        new cognito.UserPoolGroup(this, `Group-${group}`, {
          userPool: pool,
          groupName: group,
          description: `Sendproof console ${group}`,
        });
      const prefix = props.domainPrefix ?? `sendproof-${stack.account}`;
      pool.addDomain('HostedUi', { cognitoDomain: { domainPrefix: prefix } });
      domain = `${prefix}.auth.${stack.region}.amazoncognito.com`;
      this.userPool = pool;
    }
    this.hostedUiDomain = domain;

    // --- the API -------------------------------------------------------------------------------------
    this.function = new SendproofFunction(this, 'Console', {
      entry: 'functions/console/index.ts',
      description: 'Operator console API: audit reads for viewers, recorded decisions for operators',
      timeout: Duration.seconds(29),
      logRetention: props.logRetention,
    });
    const fn = this.function
      .bindLedger(props.ledger, 'readwrite')
      .bindSuppression(props.suppression, 'readwrite')
      .setEnv(ENV.queueUrl, props.intakeQueue.queueUrl)
      .setEnv(ENV.dlqUrl, props.dlq.queueUrl);
    props.transportEnv(fn);
    // The overview counts rows by state and the page lists suppressions: both are operator-rate scans.
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ConsoleScans',
        actions: ['dynamodb:Scan'],
        resources: [props.ledger.tableArn, props.suppression.tableArn],
      }),
    );
    // The circuits panel reads the failover providers' health items (`health#<provider>`) in one
    // BatchGetItem (lib/transports/health.ts readCircuits): the items it may already GetItem, in one call.
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ConsoleCircuitReads',
        actions: ['dynamodb:BatchGetItem'],
        resources: [props.ledger.tableArn],
      }),
    );
    // A `resend` decision publishes the new intent (SendMessage only: the queue URL is a setting).
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ResendIntake',
        actions: ['sqs:SendMessage'],
        resources: [props.intakeQueue.queueArn],
      }),
    );
    if (props.archive) this.grantExportBundle(fn, props.archive);
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'DlqDepth',
        actions: ['sqs:GetQueueAttributes'],
        resources: [props.dlq.queueArn],
      }),
    );

    // CloudFront standard logs are delivered with ACLs, so they get their own bucket that allows them.
    const cdnLogs = new s3.Bucket(this, 'CdnLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
      serverAccessLogsBucket: props.accessLogsBucket,
      serverAccessLogsPrefix: 'console-cdn-logs/',
      lifecycleRules: [{ expiration: Duration.days(400) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Sendproof operator console',
      defaultRootObject: 'index.html',
      minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
      enableLogging: true,
      logBucket: cdnLogs,
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: new cloudfront.ResponseHeadersPolicy(this, 'Headers', {
          securityHeadersBehavior: {
            contentSecurityPolicy: {
              // The API lives on its own origin: the page may call exactly that one.
              contentSecurityPolicy: contentSecurityPolicy(
                `'self' https://*.execute-api.${stack.region}.amazonaws.com`,
              ),
              override: true,
            },
            contentTypeOptions: { override: true },
            frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
            referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
            strictTransportSecurity: {
              accessControlMaxAge: Duration.days(365),
              includeSubdomains: true,
              override: true,
            },
          },
        }),
      },
    });
    const pageOrigin = `https://${this.distribution.distributionDomainName}`;
    fn.fn.addEnvironment('SENDPROOF_CONSOLE_ORIGIN', pageOrigin);

    this.userPoolClient = new cognito.UserPoolClient(this, 'PageClient', {
      userPool: this.userPool,
      generateSecret: false,
      authFlows: {},
      preventUserExistenceErrors: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      oAuth: {
        flows: { implicitCodeGrant: true },
        scopes: [cognito.OAuthScope.OPENID],
        callbackUrls: [`${pageOrigin}/`],
        logoutUrls: [`${pageOrigin}/`],
      },
    });

    const logGroup = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: props.logRetention ?? logs.RetentionDays.THREE_MONTHS,
    });
    this.api = new apigwv2.HttpApi(this, 'Api', {
      description: 'Sendproof operator console API',
      createDefaultStage: false,
      corsPreflight: {
        allowOrigins: [pageOrigin],
        allowHeaders: ['authorization', 'content-type'],
        allowMethods: [apigwv2.CorsHttpMethod.GET, apigwv2.CorsHttpMethod.POST],
        maxAge: Duration.hours(1),
      },
    });
    new apigwv2.HttpStage(this, 'Stage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: {
        rateLimit: props.rateLimitPerSecond ?? 10,
        burstLimit: (props.rateLimitPerSecond ?? 10) * 2,
      },
      accessLogSettings: { destination: new apigwv2.LogGroupLogDestination(logGroup) },
    });
    const authorizer = new HttpJwtAuthorizer(
      'Cognito',
      `https://cognito-idp.${stack.region}.amazonaws.com/${this.userPool.userPoolId}`,
      // Cognito access tokens carry the app client id as `client_id`, which HTTP API checks as the audience.
      { jwtAudience: [this.userPoolClient.userPoolClientId] },
    );
    const integration = new HttpLambdaIntegration('Console', fn.fn);
    this.api.addRoutes({
      path: '/api/{proxy+}',
      methods: [apigwv2.HttpMethod.GET, apigwv2.HttpMethod.POST],
      integration,
      authorizer,
    });

    for (const [rule, reason] of [
      [
        'AwsSolutions-CFR1',
        'The console is for a known operations team anywhere; access is gated by Cognito sign-in and MFA, not geography.',
      ],
      [
        'AwsSolutions-CFR2',
        'The distribution serves three static files; every API call is authorized by the JWT authorizer and throttled at the stage.',
      ],
      [
        'AwsSolutions-CFR4',
        'The default CloudFront domain and certificate are used (no custom domain); the minimum protocol is set to TLSv1.2_2021, which CloudFront applies only with a custom certificate.',
      ],
    ] as const)
      acknowledge(this.distribution, rule, reason);

    // The page is uploaded by `sendproof console publish-page` (no custom-resource function in the stack):
    // the page's static files plus config.json built from this stack's outputs.
  }

  /**
   * The export bundle (lib/console/awsExport.ts): list and read the archive's `transitions/` and
   * `digests/` objects (ListObjectsV2 with those prefixes, GetObject), and GetPublicKey of the digest key.
   * Nothing else: no write to the archive, no Sign, no Decrypt.
   */
  private grantExportBundle(
    fn: SendproofFunction,
    archive: { bucket: s3.IBucket; digestKey: kms.IKey },
  ): void {
    fn.setEnv(ENV.archiveBucket, archive.bucket.bucketName).setEnv(ENV.digestKeyId, archive.digestKey.keyArn);
    const prefixes = [ARCHIVE_PREFIX, DIGEST_PREFIX];
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ExportBundleList',
        actions: ['s3:ListBucket'],
        resources: [archive.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': prefixes.map((p) => `${p}*`) } },
      }),
    );
    const objects = prefixes.map((p) => archive.bucket.arnForObjects(`${p}*`));
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'ExportBundleRead', actions: ['s3:GetObject'], resources: objects }),
    );
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ExportBundleKey',
        actions: ['kms:GetPublicKey'],
        resources: [archive.digestKey.keyArn],
      }),
    );
    for (const resource of objects)
      acknowledgeWildcardResource(
        fn.role,
        resource,
        "A bundle holds the archive objects and digests of one notification's tenant and days; their keys are not known in advance. GetObject only.",
      );
  }
}
