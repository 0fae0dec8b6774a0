import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { EVIDENCE_BATCH } from '../../infra/constructs/EvidenceRecorder.js';
import { OUTCOME_BATCHING } from '../../infra/constructs/OutcomeEvents.js';
import { RECONCILE_RETRY_ERRORS } from '../../infra/constructs/ReconcilerWorkflow.js';
import { DEFAULT_FUNCTION_MEMORY_MB } from '../../infra/constructs/SendproofFunction.js';
import { DEFAULT_RECONCILE_EVERY_MINUTES, DISPATCHER_TIMEOUT } from '../../infra/NotificationLedger.js';
import type { SendproofStack } from '../../infra/SendproofStack.js';
import { loadNamedQueries } from '../../lib/archive/namedQueries.js';
import { ARCHIVE_COLUMNS } from '../../lib/archive/schema.js';
import { ENV } from '../../lib/config.js';
import { LEDGER_TABLE } from '../../lib/ledger/tableDefinition.js';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { BREAKER_METRIC } from '../../lib/rate/SpendBreaker.js';
import { actionsOf, allowing, SES_AND_SMS, type Statement, statementsOf, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;
/** Athena's placeholder in the location template, spelled without a template literal. */
const PROJECTED_DT = ['$', '{dt}'].join('');
const PROJECTED_TENANT = ['$', '{tenant}'].join('');

describe('NotificationLedger synthesized with SES and SMS', () => {
  let stack: SendproofStack;
  let template: Template;
  const roleStatements = (which: 'dispatcher' | 'reconciler' | 'evidence' | 'archive'): Statement[] => {
    const { ledger } = stack;
    const fn = {
      dispatcher: ledger.dispatcher.function,
      reconciler: ledger.reconciler.function,
      evidence: ledger.evidence.function,
      archive: ledger.archive.function,
    }[which];
    return statementsOf(stack, template, fn.role);
  };
  const envOf = (which: 'dispatcher' | 'reconciler' | 'evidence' | 'archive'): Record<string, unknown> => {
    const { ledger } = stack;
    const fn = {
      dispatcher: ledger.dispatcher.function,
      reconciler: ledger.reconciler.function,
      evidence: ledger.evidence.function,
      archive: ledger.archive.function,
    }[which].fn;
    const id = stack.getLogicalId(fn.node.defaultChild as never);
    return template.toJSON().Resources[id].Properties.Environment.Variables;
  };

  beforeAll(() => {
    // Prepare
    ({ stack, template } = synthStack(SES_AND_SMS));
  }, SYNTH_TIMEOUT);

  it('creates exactly the nine Sendproof functions (the webhook endpoint included) and no custom-resource functions', () => {
    // Assess: dispatch, reconcile, evidence, webhook, archive, archive maintenance, console, outcomes, SLO audit
    template.resourceCountIs('AWS::Lambda::Function', 9);
    template.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
    template.resourceCountIs('AWS::DynamoDB::Table', 2);
  });

  it('runs every function on Node 24, arm64, traced, with the Powertools service and namespace', () => {
    // Assess
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    expect(functions).toHaveLength(9);
    for (const fn of functions) {
      expect(fn.Properties.Runtime).toBe('nodejs24.x');
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
      expect(fn.Properties.Environment.Variables).toMatchObject({
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      });
      expect(fn.Properties.LoggingConfig.LogGroup).toBeDefined();
    }
  });

  it('gives no function role an AWS managed policy', () => {
    // Assess
    const roles = template.findResources('AWS::IAM::Role', {
      Properties: { AssumeRolePolicyDocument: Match.serializedJson(Match.anyValue()) },
    });
    const lambdaRoles = Object.values(template.findResources('AWS::IAM::Role')).filter((r) =>
      JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('lambda.amazonaws.com'),
    );
    expect(roles).toBeDefined();
    expect(lambdaRoles).toHaveLength(9);
    for (const role of lambdaRoles) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it('keeps intents invisible for six dispatcher timeouts and parks them after five receives, encrypted', () => {
    // Assess
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: DISPATCHER_TIMEOUT.toSeconds() * 6,
      SqsManagedSseEnabled: true,
      RedrivePolicy: { maxReceiveCount: Match.anyValue(), deadLetterTargetArn: Match.anyValue() },
    });
    const intake = Object.values(template.findResources('AWS::SQS::Queue')).find(
      (q) => q.Properties.RedrivePolicy,
    );
    expect(intake?.Properties.RedrivePolicy.maxReceiveCount).toBeGreaterThanOrEqual(5);
    expect(intake?.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * DISPATCHER_TIMEOUT.toSeconds());
    for (const queue of Object.values(template.findResources('AWS::SQS::Queue'))) {
      expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
    }
  });

  it('feeds the dispatcher ten intents at a time with partial batch responses and a concurrency cap', () => {
    // Assess
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 10 },
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('IntakeQueue'), 'Arn'] },
    });
  });

  it('streams the ledger to the archiver with bisect, bounded retries, a max age and an on-failure queue', () => {
    // Assess
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('Ledger'), 'StreamArn'] },
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: Match.anyValue(),
      MaximumRecordAgeInSeconds: Match.anyValue(),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      StartingPosition: 'TRIM_HORIZON',
      // One object per batch and partition: big batches, a long window.
      BatchSize: 1000,
      MaximumBatchingWindowInSeconds: 60,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('FailedBatches'), 'Arn'] } },
      },
    });
    const mapping = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).find(
      (m) => m.Properties.BisectBatchOnFunctionError,
    );
    expect(mapping?.Properties.MaximumRecordAgeInSeconds).toBeLessThan(24 * 3600);
    expect(mapping?.Properties.MaximumRetryAttempts).toBeGreaterThan(0);
  });

  it('builds the ledger table from the shared definition with PITR, deletion protection, RETAIN, stream and TTL', () => {
    // Assess
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        BillingMode: 'PAY_PER_REQUEST',
        DeletionProtectionEnabled: true,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        StreamSpecification: { StreamViewType: LEDGER_TABLE.streamView },
        TimeToLiveSpecification: { AttributeName: LEDGER_TABLE.ttlAttribute, Enabled: true },
        KeySchema: [{ AttributeName: LEDGER_TABLE.partitionKey, KeyType: 'HASH' }],
        GlobalSecondaryIndexes: [
          {
            IndexName: LEDGER_TABLE.attentionIndex.name,
            KeySchema: [
              { AttributeName: LEDGER_TABLE.attentionIndex.partitionKey, KeyType: 'HASH' },
              { AttributeName: LEDGER_TABLE.attentionIndex.sortKey, KeyType: 'RANGE' },
            ],
          },
        ],
      },
    });
  });

  it('locks archived transitions in COMPLIANCE mode for the configured days, versioned, encrypted, logged', () => {
    // Assess
    template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      Properties: {
        ObjectLockEnabled: true,
        ObjectLockConfiguration: {
          ObjectLockEnabled: 'Enabled',
          Rule: { DefaultRetention: { Mode: 'COMPLIANCE', Days: 400 } },
        },
        VersioningConfiguration: { Status: 'Enabled' },
        BucketEncryption: Match.objectLike({ ServerSideEncryptionConfiguration: Match.anyValue() }),
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        LoggingConfiguration: Match.objectLike({ LogFilePrefix: 'archive/' }),
      },
    });
  });

  it('refuses non-TLS access to every bucket', () => {
    // Assess
    const policies = Object.values(template.findResources('AWS::S3::BucketPolicy'));
    expect(policies).toHaveLength(5); // archive, access logs, Athena results, console page, CDN logs
    for (const policy of policies) {
      expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Action: 's3:*',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      );
    }
  });

  it('declares the Glue table from ARCHIVE_COLUMNS with tenant injected and date projection on dt', () => {
    // Assess
    const table = Object.values(template.findResources('AWS::Glue::Table'))[0];
    const input = table?.Properties.TableInput;
    expect(
      input.StorageDescriptor.Columns.map((c: { Name: string; Type: string }) => [c.Name, c.Type]),
    ).toEqual(ARCHIVE_COLUMNS.map((c) => [c.name, c.type]));
    expect(input.PartitionKeys).toEqual([
      { Name: 'tenant', Type: 'string' },
      { Name: 'dt', Type: 'string' },
    ]);
    expect(input.Parameters).toMatchObject({
      'projection.enabled': 'true',
      'projection.tenant.type': 'injected',
      'projection.dt.type': 'date',
      'projection.dt.format': 'yyyy-MM-dd',
    });
    expect(JSON.stringify(input.Parameters['storage.location.template'])).toContain(
      `/transitions/tenant=${PROJECTED_TENANT}/dt=${PROJECTED_DT}/`,
    );
  });

  it('signs archive digests with a KMS RSA key that only the hourly maintenance function may use, for Sign', () => {
    // Assess
    template.hasResourceProperties('AWS::KMS::Key', { KeySpec: 'RSA_2048', KeyUsage: 'SIGN_VERIFY' });
    const keyId = Object.keys(
      template.findResources('AWS::KMS::Key', { Properties: { KeySpec: 'RSA_2048' } }),
    )[0]!;
    const policies = Object.values(template.findResources('AWS::IAM::Policy'));
    const signers = policies.filter((p) =>
      JSON.stringify(p.Properties.PolicyDocument).includes(`"kms:Sign"`),
    );
    expect(signers).toHaveLength(1);
    expect(JSON.stringify(signers[0]!.Properties.PolicyDocument)).toContain(keyId);
    expect(JSON.stringify(signers[0]!.Properties.Roles)).toContain('Maintenance');
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 hour)',
      Target: Match.objectLike({ Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('Maintenance'), 'Arn'] } }),
    });
  });

  it('enforces the Athena result location in a separate bucket and registers every named query', () => {
    // Assess
    const workGroup = Object.values(template.findResources('AWS::Athena::WorkGroup'))[0];
    const config = workGroup?.Properties.WorkGroupConfiguration;
    expect(config.EnforceWorkGroupConfiguration).toBe(true);
    expect(JSON.stringify(config.ResultConfiguration.OutputLocation)).toContain('QueryResults');
    expect(JSON.stringify(config.ResultConfiguration.OutputLocation)).not.toContain('ArchiveBucket');
    const queries = loadNamedQueries();
    template.resourceCountIs('AWS::Athena::NamedQuery', queries.length);
    for (const query of queries) {
      template.hasResourceProperties('AWS::Athena::NamedQuery', { Name: query.name, QueryString: query.sql });
    }
  });

  it('grants the dispatcher exactly its actions: ledger without Scan, suppression read and update, SES, SMS, secrets, the seal key', () => {
    // Prepare
    const statements = roleStatements('dispatcher');
    // Assess
    expect(actionsOf(statements)).toEqual(
      [
        // The batch's gate facts: one BatchGetItem over the ledger and the suppression list.
        'dynamodb:BatchGetItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        // Sealing parked intents (AWS Encryption SDK data keys); nothing else may open them.
        'kms:Decrypt',
        'kms:GenerateDataKey',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        'secretsmanager:DescribeSecret',
        'secretsmanager:GetSecretValue',
        'ses:SendEmail',
        'sms-voice:SendTextMessage',
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:ReceiveMessage',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ].sort(),
    );
    // A bounce kept before the accepted write and a provider's opt-out answer suppress the recipient
    // from the dispatcher itself (the IAM-recorded soak's early bounces make that UpdateItem): update
    // only, never a PutItem that could replace an entry's history.
    const suppression = statements.find((s) => s.Sid === 'SuppressionUpdate');
    expect([...(suppression?.Action ?? [])].sort()).toEqual([
      'dynamodb:GetItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    const batch = allowing(statements, 'dynamodb:BatchGetItem');
    expect(batch.map((s) => s.Sid)).toEqual(['GateFactsBatchRead']);
    expect(batch[0]?.Resource).toEqual([
      { 'Fn::GetAtt': [expect.stringMatching(/TablesLedger/), 'Arn'] },
      { 'Fn::GetAtt': [expect.stringMatching(/TablesSuppression/), 'Arn'] },
    ]);
    expect(JSON.stringify(allowing(statements, 'ses:SendEmail')[0]?.Resource)).toContain(
      ':identity/example.com',
    );
    expect(JSON.stringify(allowing(statements, 'sms-voice:SendTextMessage')[0]?.Resource)).toContain(
      'phone-number/phone-0123456789abcdef',
    );
    for (const statement of statements) {
      if (statement.Resource === '*')
        expect(statement.Action).toEqual(expect.arrayContaining(['xray:PutTraceSegments']));
    }
  });

  it('does not let the dispatcher write the archive bucket', () => {
    // Prepare
    const statements = roleStatements('dispatcher');
    // Assess
    expect(actionsOf(statements).filter((a) => a.startsWith('s3:'))).toEqual([]);
    expect(JSON.stringify(statements)).not.toContain('ArchiveBucket');
  });

  it('does not let the archiver send email or SMS, or read anything but the ledger stream', () => {
    // Prepare
    const statements = roleStatements('archive');
    // Assess
    expect(allowing(statements, 'ses:SendEmail')).toEqual([]);
    expect(actionsOf(statements).filter((a) => a.startsWith('ses:') || a.startsWith('sms-voice:'))).toEqual(
      [],
    );
    expect(actionsOf(statements).filter((a) => a.startsWith('s3:'))).toEqual([
      's3:PutObject',
      's3:PutObjectRetention',
    ]);
    expect(JSON.stringify(allowing(statements, 's3:PutObject')[0]?.Resource)).toContain('/transitions/*');
    expect(actionsOf(statements).filter((a) => a.startsWith('dynamodb:'))).toEqual([
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
    ]);
  });

  it('gives the reconciler and the evidence recorder the ledger only when no provider secret exists', () => {
    // Prepare
    const reconciler = actionsOf(roleStatements('reconciler'));
    const evidence = actionsOf(roleStatements('evidence'));
    const own = (actions: string[]) =>
      actions.filter((a) => !a.startsWith('logs:') && !a.startsWith('xray:'));
    // Assess
    // The sweep publishes resume notices to the intake queue, and nothing else there; no seal key. It
    // deletes released seals, and only those (`seal#…` items). Both read the deployment secret, and
    // nothing else of Secrets Manager: pulled and pushed events' labels are opened with it.
    expect(own(reconciler)).toEqual([
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'secretsmanager:DescribeSecret',
      'secretsmanager:GetSecretValue',
      'sqs:SendMessage',
    ]);
    const deletes = allowing(roleStatements('reconciler'), 'dynamodb:DeleteItem');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]).toMatchObject({
      Sid: 'LedgerReleaseSeals',
      Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['seal#*'] } },
    });
    // The evidence recorder reads its queue (the event source mapping); it sends nowhere itself.
    expect(own(evidence)).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'secretsmanager:DescribeSecret',
      'secretsmanager:GetSecretValue',
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ]);
  });

  it('sets each env var next to its grant: the names come from lib/config.ts ENV', () => {
    // Prepare
    const dispatcher = envOf('dispatcher');
    const archive = envOf('archive');
    // Assess
    expect(Object.keys(dispatcher)).toEqual(
      expect.arrayContaining([
        ENV.ledgerTable,
        ENV.suppressionTable,
        ENV.contentHashSecretArn,
        ENV.emailTransport,
        ENV.smsTransport,
        ENV.emailFrom,
        ENV.sesConfigurationSet,
        ENV.smsOriginationIdentity,
        ENV.smsConfigurationSet,
        ENV.purposes,
      ]),
    );
    expect(dispatcher[ENV.templatesDir]).toBe('/var/task/templates');
    expect(dispatcher[ENV.emailTransport]).toBe('ses');
    expect(dispatcher[ENV.smsTransport]).toBe('sms-v2');
    expect(JSON.parse(dispatcher[ENV.purposes] as string)).toEqual([]);
    expect(dispatcher[ENV.contentHashKey]).toBeUndefined();
    expect(Object.keys(archive)).toContain(ENV.archiveBucket);
    expect(Object.keys(archive)).not.toContain(ENV.contentHashSecretArn);
  });

  it('creates the content-hash key as a generated secret and passes it by ARN', () => {
    // Assess
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: Match.objectLike({ PasswordLength: 64 }),
    });
    const secretId = Object.keys(template.findResources('AWS::SecretsManager::Secret'))[0];
    expect(envOf('dispatcher')[ENV.contentHashSecretArn]).toEqual({ Ref: secretId });
    // Provider labels are sealed with keys derived from it, so whatever records evidence opens them with it.
    for (const fn of ['evidence', 'reconciler'] as const)
      expect(envOf(fn)[ENV.contentHashSecretArn], fn).toEqual({ Ref: secretId });
  });

  it('loops the reconcile function page by page while hasMore, bounded, retrying Lambda service errors', () => {
    // Prepare
    const machine = Object.values(template.findResources('AWS::StepFunctions::StateMachine'))[0];
    const raw = machine?.Properties.DefinitionString;
    // Tokens (ARNs, partition) sit inside JSON strings; name each by its reference to get parseable JSON.
    const json = (raw['Fn::Join'][1] as Array<string | { Ref?: string; 'Fn::GetAtt'?: string[] }>)
      .map((part) => (typeof part === 'string' ? part : `<${part.Ref ?? part['Fn::GetAtt']?.join('.')}>`))
      .join('');
    // Act
    const definition = JSON.parse(json);
    const states = definition.States;
    // Assess
    expect(definition.StartAt).toBe('Begin');
    expect(states.Begin.Next).toBe('ReconcilePage');
    expect(states.ReconcilePage.Type).toBe('Task');
    expect(states.ReconcilePage.Resource).toMatch(/^<.*Reconcile.*Function.*\.Arn>$/);
    expect(states.ReconcilePage.InputPath).toBe('$.request');
    expect(states.ReconcilePage.Parameters).toBeUndefined();
    expect(states.ReconcilePage.ResultPath).toBe('$.page');
    expect(states.ReconcilePage.Retry).toEqual([
      expect.objectContaining({
        ErrorEquals: RECONCILE_RETRY_ERRORS,
        BackoffRate: 2,
        MaxAttempts: expect.any(Number),
        IntervalSeconds: expect.any(Number),
      }),
    ]);
    expect(states.ReconcilePage.Next).toBe('MorePages?');
    const choice = states['MorePages?'];
    expect(choice.Type).toBe('Choice');
    expect(choice.Choices).toEqual([
      { Variable: '$.page.hasMore', BooleanEquals: false, Next: 'Done' },
      { Variable: '$.loop', NumericGreaterThanEquals: 49, Next: 'ContinuesNextSchedule' },
    ]);
    expect(choice.Default).toBe('NextPage');
    expect(states.NextPage.Parameters).toEqual({
      request: { 'cursor.$': '$.page.cursor' },
      'loop.$': 'States.MathAdd($.loop, 1)',
    });
    expect(states.NextPage.Next).toBe('ReconcilePage');
    expect(states.ContinuesNextSchedule.Parameters.status).toBe('continues next schedule');
    expect(states.ContinuesNextSchedule.Next).toBe('Paused');
    expect(states.Paused.Type).toBe('Succeed');
    expect(states.Done.Type).toBe('Succeed');
  });

  it('serves the webhook endpoint from a Function URL whose function reads the signing secret by ARN', () => {
    // Assess: no IAM auth (providers cannot sign SigV4); the provider signature is the authentication
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE' });
    const fns = Object.values(template.findResources('AWS::Lambda::Function')) as Array<{
      Properties: { Environment: { Variables: Record<string, unknown> } };
    }>;
    const webhook = fns.filter((f) => 'SENDPROOF_WEBHOOK_SECRET_ARN' in f.Properties.Environment.Variables);
    expect(webhook).toHaveLength(1);
    expect(webhook[0]!.Properties.Environment.Variables).toHaveProperty('SENDPROOF_SUPPRESSION_TABLE');
  });

  it('runs every Sendproof function at the memory and the reconcile schedule the cost model bills (bench/costRun.ts)', () => {
    // Assess: npm run bench:cost prices GB-s at DEFAULT_FUNCTION_MEMORY_MB and spreads 30 days of runs
    // every DEFAULT_RECONCILE_EVERY_MINUTES; a function given other memory must be priced at it.
    const functions = Object.values(template.findResources('AWS::Lambda::Function')).filter(
      (f) =>
        String((f as { Properties?: { Description?: string } }).Properties?.Description ?? '').length > 0 &&
        (f as { Properties?: { Environment?: { Variables?: Record<string, unknown> } } }).Properties
          ?.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === SERVICE_NAME,
    );
    expect(functions.length).toBeGreaterThanOrEqual(5);
    for (const f of functions)
      expect((f as { Properties: { MemorySize?: number } }).Properties.MemorySize).toBe(
        DEFAULT_FUNCTION_MEMORY_MB,
      );
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: `rate(${DEFAULT_RECONCILE_EVERY_MINUTES} minutes)`,
    });
  });

  it('starts the reconcile state machine from EventBridge Scheduler', () => {
    // Assess
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(5 minutes)',
      State: 'ENABLED',
      Target: Match.objectLike({ Arn: { Ref: Match.stringLikeRegexp('StateMachine') } }),
    });
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: Match.objectLike({ Level: 'ALL' }),
    });
  });

  it('wires SES v2 events through EventBridge and SMS events through SNS to one queue the evidence recorder reads in batches with partial batch responses', () => {
    // Assess
    template.hasResourceProperties('AWS::SES::ConfigurationSetEventDestination', {
      EventDestination: Match.objectLike({
        Enabled: true,
        EventBridgeDestination: { EventBusArn: Match.anyValue() },
      }),
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({ source: ['aws.ses'] }),
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('EvidenceEvents'), 'Arn'] },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('UndeliveredEvents'), 'Arn'] } },
        }),
      ],
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('UndeliveredEvents'), 'Arn'] },
        maxReceiveCount: EVIDENCE_BATCH.maxReceiveCount,
      },
      VisibilityTimeout: 180,
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('EvidenceEvents'), 'Arn'] },
      BatchSize: EVIDENCE_BATCH.batchSize,
      MaximumBatchingWindowInSeconds: EVIDENCE_BATCH.maxBatchingWindowSeconds,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    // The outcome events' stream source gathers 5 s by default (an invocation per 19 notifications at
    // 10 million a month; 1 s was one per 4): test/infra/serviceLevels.test.ts sets 1 s explicitly.
    const outcomesId = stack.getLogicalId(stack.ledger.outcomeEvents.function.fn.node.defaultChild as never);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: outcomesId },
      MaximumBatchingWindowInSeconds: OUTCOME_BATCHING.maxBatchingWindowSeconds,
    });
    expect(OUTCOME_BATCHING.maxBatchingWindowSeconds).toBe(5);
    // No asynchronous invocation of the evidence function is left (nothing to retry out of sight).
    expect(
      Object.keys(template.findResources('AWS::Lambda::EventInvokeConfig')).filter((id) =>
        id.includes('Evidence'),
      ),
    ).toEqual([]);
    template.hasResourceProperties('AWS::SMSVOICE::ConfigurationSet', {
      EventDestinations: [
        Match.objectLike({
          Enabled: true,
          SnsDestination: { TopicArn: { Ref: Match.stringLikeRegexp('SmsEvents') } },
        }),
      ],
    });
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'sqs',
      Endpoint: { 'Fn::GetAtt': [Match.stringLikeRegexp('EvidenceEvents'), 'Arn'] },
      TopicArn: { Ref: Match.stringLikeRegexp('SmsEvents') },
    });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Principal: { Service: 'sms-voice.amazonaws.com' }, Action: 'sns:Publish' }),
        ]),
      },
    });
  });

  it('alarms on DLQs, queue age, iterator age, oldest unknown, oldest non-terminal, stalled, quarantined, a failed last-receive seal, an open SMS spend breaker, reconcile failures, errors, throttles', () => {
    // Prepare
    // The SLO alarms (burn rates, duplicates, the outcome consumer's lag) are test/infra/serviceLevels.test.ts's.
    const slo = template.findResources('AWS::CloudWatch::Alarm');
    const alarms = Object.entries(slo)
      .filter(([id]) => !id.includes('ServiceLevels'))
      .map(([, alarm]) => alarm);
    const byMetric = (name: string) => alarms.filter((a) => a.Properties.MetricName === name);
    // Assess: the DLQs include the outcome events' two (undelivered events, stream batches given up)
    expect(byMetric('ApproximateNumberOfMessagesVisible')).toHaveLength(5);
    expect(byMetric('ApproximateAgeOfOldestMessage')).toHaveLength(1);
    const iterator = byMetric('IteratorAge');
    expect(iterator).toHaveLength(1);
    expect(iterator[0]?.Properties.Threshold).toBeLessThanOrEqual(6 * 3600 * 1000);
    for (const name of [
      METRIC.oldestUnknownAgeSeconds,
      METRIC.quarantinedRows,
      METRIC.oldestNonTerminalAgeSeconds,
      METRIC.stalled,
      METRIC.sealFailures,
      BREAKER_METRIC.opened,
    ]) {
      const custom = byMetric(name);
      expect(custom).toHaveLength(1);
      expect(custom[0]?.Properties).toMatchObject({
        Namespace: METRICS_NAMESPACE,
        Dimensions: [{ Name: 'service', Value: SERVICE_NAME }],
      });
    }
    const reconcile = alarms.filter((a) =>
      JSON.stringify(a.Properties.Metrics ?? []).includes('ExecutionsFailed'),
    );
    expect(reconcile).toHaveLength(1);
    expect(byMetric('Errors')).toHaveLength(6);
    expect(byMetric('Throttles')).toHaveLength(6);
    // … the six evidence alarms (test/infra/evidenceAlarms.test.ts, EvidenceRefused among them), the
    // spend breaker's and the last-receive seal's (test/infra/sealAlarm.test.ts).
    expect(alarms).toHaveLength(6 + 1 + 1 + 4 + 1 + 12 + 5 + 1 + 1);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: expect.stringMatching(/AlarmTopic/) }]);
    }
    // The alarms' dashboard and the SLO dashboard.
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 2);
  });

  it('outputs what a user needs to publish intents and run audits', () => {
    // Assess
    const outputs = Object.keys(template.findOutputs('*'));
    expect(outputs).toEqual(
      expect.arrayContaining([
        'IntakeQueueUrl',
        'IntakeQueueArn',
        'IntakeDlqUrl',
        'LedgerTableName',
        'ArchiveBucketName',
        'AthenaWorkGroup',
        'ReconcileStateMachineArn',
        'SmsEventsTopicArn',
      ]),
    );
  });
});
