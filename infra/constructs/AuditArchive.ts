import { Duration, Names, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as athena from 'aws-cdk-lib/aws-athena';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as glue from 'aws-cdk-lib/aws-glue';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as schedulerTargets from 'aws-cdk-lib/aws-scheduler-targets';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ARCHIVE_BATCHING } from '../../lib/archive/archiver.js';
import { DIGEST_PREFIX } from '../../lib/archive/digest.js';
import type { NamedQuery } from '../../lib/archive/namedQueries.js';
import {
  ARCHIVE_COLUMNS,
  ARCHIVE_PARTITION,
  ARCHIVE_PARTITIONS,
  ARCHIVE_PREFIX,
  ARCHIVE_TABLE,
  ARCHIVE_TENANT_PARTITION,
} from '../../lib/archive/schema.js';
import { ENV } from '../../lib/config.js';
import { acknowledge, acknowledgeWildcardResource } from '../nag.js';
import { SendproofFunction } from './SendproofFunction.js';

export interface AuditArchiveProps {
  ledger: dynamodb.ITable;
  /** Default Object Lock retention, in days, in COMPLIANCE mode: nobody, root included, can shorten it. */
  retentionDays: number;
  namedQueries: readonly NamedQuery[];
  /** The deployment's purpose policies (JSON, as ENV.purposes): each purpose's archive retention. */
  purposesJson?: string;
  /** Oldest stream record the archiver still tries; older ones go to the failure queue. */
  maxRecordAge?: Duration;
  logRetention?: logs.RetentionDays;
  /** First day partition projection enumerates. */
  projectionStartDate?: string;
}

/** Retries of a failing stream batch before it is bisected away to the failure queue. */
export const ARCHIVE_RETRY_ATTEMPTS = 10;

export { ARCHIVE_BATCHING } from '../../lib/archive/archiver.js';

/**
 * The audit trail: ledger stream → archiver → Object Lock bucket (JSON Lines, gzip, one Hive partition per
 * day), queried through a Glue table with partition projection and an Athena workgroup whose result
 * location is enforced. Access logs for both buckets go to a separate log bucket.
 */
export class AuditArchive extends Construct {
  readonly bucket: s3.Bucket;
  readonly resultsBucket: s3.Bucket;
  readonly accessLogsBucket: s3.Bucket;
  readonly function: SendproofFunction;
  readonly failureQueue: sqs.Queue;
  /** Hourly: backfills batches from the failure queue, then signs digests of new objects. */
  readonly maintenance: SendproofFunction;
  /** RSA key (SIGN_VERIFY) whose private half never leaves KMS; verifiers fetch the public half. */
  readonly digestKey: kms.Key;
  readonly maintenanceSchedule: scheduler.Schedule;
  readonly database: glue.CfnDatabase;
  readonly table: glue.CfnTable;
  readonly workGroup: athena.CfnWorkGroup;
  readonly namedQueries: athena.CfnNamedQuery[];

  constructor(scope: Construct, id: string, props: AuditArchiveProps) {
    super(scope, id);
    if (!Number.isInteger(props.retentionDays) || props.retentionDays < 1) {
      throw new Error(`archive retentionDays must be a positive integer, got ${props.retentionDays}`);
    }
    const stack = Stack.of(this);

    this.accessLogsBucket = new s3.Bucket(this, 'AccessLogs', {
      // Server access logging delivers with SSE-S3 only.
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      // Object ownership is left to CDK: with @aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy (set in this
      // app's cdk.json) log delivery is granted by bucket policy; a host stack without it gets the ACL mode.
      versioned: true,
      lifecycleRules: [{ expiration: Duration.days(400), noncurrentVersionExpiration: Duration.days(30) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    acknowledge(
      this.accessLogsBucket,
      'AwsSolutions-S1',
      'This is the access-log bucket of the archive and results buckets; logging it into itself would loop.',
    );

    this.bucket = new s3.Bucket(this, 'Bucket', {
      objectLockEnabled: true,
      objectLockDefaultRetention: s3.ObjectLockRetention.compliance(Duration.days(props.retentionDays)),
      versioned: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'archive/',
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.resultsBucket = new s3.Bucket(this, 'QueryResults', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'athena-results/',
      lifecycleRules: [{ expiration: Duration.days(30) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // Archiver: stream → bucket. Bisect isolates a poison record; after the retries a batch goes to the
    // failure queue (its stream coordinates, not the data) instead of blocking the shard for 24 hours.
    this.function = new SendproofFunction(this, 'Archive', {
      entry: 'functions/archive/index.ts',
      description: 'Copies every ledger transition from the table stream to the Object Lock archive',
      timeout: Duration.minutes(1),
      logRetention: props.logRetention,
    }).bindArchiveWriter(this.bucket, ARCHIVE_PREFIX);
    this.function.setEnv(ENV.archiveRetentionDays, String(props.retentionDays));
    if (props.purposesJson) this.function.setEnv(ENV.purposes, props.purposesJson);
    this.failureQueue = new sqs.Queue(this, 'FailedBatches', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(
      this.failureQueue,
      'AwsSolutions-SQS3',
      'This queue is the on-failure destination of the archiver stream mapping.',
    );
    this.function.fn.addEventSource(
      new DynamoEventSource(props.ledger, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: ARCHIVE_BATCHING.batchSize,
        maxBatchingWindow: Duration.seconds(ARCHIVE_BATCHING.maxBatchingWindowSeconds),
        bisectBatchOnError: true,
        retryAttempts: ARCHIVE_RETRY_ATTEMPTS,
        maxRecordAge: props.maxRecordAge ?? Duration.hours(12),
        reportBatchItemFailures: true,
        // One batch per shard at a time: transitions of one row stay in order.
        parallelizationFactor: 1,
        onFailure: new SqsDlq(this.failureQueue),
      }),
    );
    // dynamodb:ListStreams (Resource "*") is covered by the role's Resource::* acknowledgement in
    // SendproofFunction, whose reason names it; the other stream actions are scoped to the ledger stream.

    // Digests and backfill: one hourly function. It signs with a KMS asymmetric key (Sign only; the
    // private key never leaves KMS), reads the archive and writes digests/ and backfill objects, reads the
    // failure queue and Scans the ledger (the backfill finds rows by time; nothing else may Scan).
    this.digestKey = new kms.Key(this, 'DigestKey', {
      description: 'Signs Sendproof archive digests (RSASSA_PSS_SHA_256)',
      keySpec: kms.KeySpec.RSA_2048,
      keyUsage: kms.KeyUsage.SIGN_VERIFY,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.maintenance = new SendproofFunction(this, 'Maintenance', {
      entry: 'functions/archive-maintenance/index.ts',
      description: 'Backfills archive batches the archiver gave up on, then signs digests of new objects',
      timeout: Duration.minutes(10),
      logRetention: props.logRetention,
    });
    const maintenanceRole = this.maintenance.role;
    this.maintenance
      .setEnv(ENV.archiveBucket, this.bucket.bucketName)
      .setEnv(ENV.ledgerTable, props.ledger.tableName)
      .setEnv(ENV.archiveFailuresUrl, this.failureQueue.queueUrl)
      .setEnv(ENV.digestKeyId, this.digestKey.keyArn)
      .setEnv(ENV.archiveRetentionDays, String(props.retentionDays));
    if (props.purposesJson) this.maintenance.setEnv(ENV.purposes, props.purposesJson);
    this.digestKey.grant(maintenanceRole, 'kms:Sign');
    this.failureQueue.grantConsumeMessages(maintenanceRole);
    const archived = this.bucket.arnForObjects(`${ARCHIVE_PREFIX}*`);
    const digests = this.bucket.arnForObjects(`${DIGEST_PREFIX}*`);
    maintenanceRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'LedgerScanForBackfill',
        actions: ['dynamodb:Scan'],
        resources: [props.ledger.tableArn],
      }),
    );
    maintenanceRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ArchiveReadWriteForDigests',
        actions: ['s3:GetObject', 's3:PutObject', 's3:PutObjectRetention'],
        resources: [archived, digests],
      }),
    );
    maintenanceRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ArchiveList',
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [`${ARCHIVE_PREFIX}*`, `${DIGEST_PREFIX}*`] } },
      }),
    );
    for (const resource of [archived, digests])
      acknowledgeWildcardResource(
        maintenanceRole,
        resource,
        'Digests hash every archive object of a partition and are written under digests/; keys are not known in advance.',
      );
    this.maintenanceSchedule = new scheduler.Schedule(this, 'MaintenanceSchedule', {
      description: 'Archive backfill and signed digests, hourly',
      schedule: scheduler.ScheduleExpression.rate(Duration.hours(1)),
      target: new schedulerTargets.LambdaInvoke(this.maintenance.fn, {
        input: scheduler.ScheduleTargetInput.fromObject({}),
        retryAttempts: 2,
      }),
    });
    // The scheduler's target role is a stack-level singleton; LambdaInvoke grants the function and its
    // versions (`<arn>:*`).
    acknowledgeWildcardResource(
      stack,
      `${this.maintenance.fn.functionArn}:*`,
      'EventBridge Scheduler may invoke the maintenance function and its versions; nothing else.',
    );

    // Glue database + table over transitions/tenant=T/dt=YYYY-MM-DD/*.jsonl.gz with partition projection:
    // no crawler, no MSCK REPAIR, a new day is queryable the moment its first object lands. `tenant` is
    // injected: Athena refuses a query without `tenant = <value>`, so one tenant's audit never lists
    // another tenant's objects, and a new tenant needs no deployment.
    // Unique per construct instance, so two ledgers in one account/stack do not share a catalog database.
    const databaseName = Names.uniqueResourceName(this, { maxLength: 64, separator: '_' })
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, '_');
    this.database = new glue.CfnDatabase(this, 'Database', {
      catalogId: stack.account,
      databaseInput: { name: databaseName, description: 'Sendproof audit archive' },
    });
    const location = `s3://${this.bucket.bucketName}/${ARCHIVE_PREFIX}`;
    this.table = new glue.CfnTable(this, 'TransitionsTable', {
      catalogId: stack.account,
      databaseName,
      tableInput: {
        name: ARCHIVE_TABLE,
        description: 'One line per ledger transition (lib/archive/schema.ts)',
        tableType: 'EXTERNAL_TABLE',
        partitionKeys: ARCHIVE_PARTITIONS.map((p) => ({ name: p.name, type: p.type })),
        parameters: {
          classification: 'json',
          compressionType: 'gzip',
          'projection.enabled': 'true',
          [`projection.${ARCHIVE_TENANT_PARTITION.name}.type`]: 'injected',
          [`projection.${ARCHIVE_PARTITION.name}.type`]: 'date',
          [`projection.${ARCHIVE_PARTITION.name}.format`]: ARCHIVE_PARTITION.format,
          [`projection.${ARCHIVE_PARTITION.name}.range`]: `${props.projectionStartDate ?? '2025-01-01'},NOW`,
          [`projection.${ARCHIVE_PARTITION.name}.interval`]: '1',
          [`projection.${ARCHIVE_PARTITION.name}.interval.unit`]: 'DAYS',
          'storage.location.template': `${location}${ARCHIVE_PARTITIONS.map((p) => `${p.name}=\${${p.name}}`).join('/')}/`,
        },
        storageDescriptor: {
          location,
          columns: ARCHIVE_COLUMNS.map((c) => ({ name: c.name, type: c.type, comment: c.comment })),
          inputFormat: 'org.apache.hadoop.mapred.TextInputFormat',
          outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
          serdeInfo: {
            serializationLibrary: 'org.openx.data.jsonserde.JsonSerDe',
            parameters: { 'ignore.malformed.json': 'false' },
          },
        },
      },
    });
    this.table.addResourceDependency(this.database);

    this.workGroup = new athena.CfnWorkGroup(this, 'WorkGroup', {
      name: Names.uniqueResourceName(this, { maxLength: 128, separator: '-' }),
      description: 'Sendproof audit queries; result location and encryption are enforced',
      state: 'ENABLED',
      recursiveDeleteOption: false,
      workGroupConfiguration: {
        enforceWorkGroupConfiguration: true,
        publishCloudWatchMetricsEnabled: true,
        bytesScannedCutoffPerQuery: 10 * 1024 ** 3,
        resultConfiguration: {
          outputLocation: `s3://${this.resultsBucket.bucketName}/results/`,
          encryptionConfiguration: { encryptionOption: 'SSE_S3' },
        },
      },
    });

    this.namedQueries = props.namedQueries.map((query) => {
      const namedQuery = new athena.CfnNamedQuery(this, `Query-${query.name}`, {
        name: query.name,
        description: describeQuery(query),
        database: databaseName,
        queryString: query.sql,
        workGroup: this.workGroup.ref,
      });
      namedQuery.addResourceDependency(this.workGroup);
      namedQuery.addResourceDependency(this.table);
      return namedQuery;
    });
    this.databaseName = databaseName;
  }

  readonly databaseName: string;

  /**
   * Lets a function run the named audit queries in the workgroup (the console in AWS): the workgroup and
   * database names as settings, and exactly what Athena needs from the caller — the query calls on this
   * workgroup, the Glue catalog entries of this database, reads of the archive's transitions, and writes
   * of the results under the workgroup's enforced result location. Nothing else: no other workgroup,
   * no archive write or delete.
   */
  grantAuditQueries(grantee: AuditQueryGrantee): void {
    const stack = Stack.of(this);
    grantee.setEnv(ENV.athenaWorkGroup, this.workGroup.ref);
    grantee.setEnv(ENV.athenaDatabase, this.databaseName);
    const statement = (sid: string, actions: string[], resources: string[]) =>
      grantee.role.addToPrincipalPolicy(new iam.PolicyStatement({ sid, actions, resources }));
    statement(
      'AuditQueriesAthena',
      [
        'athena:StartQueryExecution',
        'athena:GetQueryExecution',
        'athena:GetQueryResults',
        'athena:StopQueryExecution',
      ],
      [stack.formatArn({ service: 'athena', resource: 'workgroup', resourceName: this.workGroup.ref })],
    );
    statement(
      'AuditQueriesCatalog',
      ['glue:GetDatabase', 'glue:GetTable', 'glue:GetPartitions'],
      [
        stack.formatArn({ service: 'glue', resource: 'catalog' }),
        stack.formatArn({ service: 'glue', resource: 'database', resourceName: this.databaseName }),
        stack.formatArn({
          service: 'glue',
          resource: 'table',
          resourceName: `${this.databaseName}/${ARCHIVE_TABLE}`,
        }),
      ],
    );
    const archiveObjects = this.bucket.arnForObjects(`${ARCHIVE_PREFIX}*`);
    statement('AuditQueriesArchiveRead', ['s3:GetObject'], [archiveObjects]);
    statement('AuditQueriesArchiveList', ['s3:ListBucket', 's3:GetBucketLocation'], [this.bucket.bucketArn]);
    const resultObjects = this.resultsBucket.arnForObjects('results/*');
    statement(
      'AuditQueriesResults',
      ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'],
      [resultObjects],
    );
    statement(
      'AuditQueriesResultsBucket',
      ['s3:ListBucket', 's3:GetBucketLocation', 's3:ListBucketMultipartUploads'],
      [this.resultsBucket.bucketArn],
    );
    acknowledgeWildcardResource(
      grantee.role,
      archiveObjects,
      'Athena reads the archive objects of the queried tenant and days; their keys are not known in advance. GetObject only.',
    );
    acknowledgeWildcardResource(
      grantee.role,
      resultObjects,
      "Athena writes each query's result object under the workgroup's enforced result prefix as the caller.",
    );
  }
}

export interface AuditQueryGrantee {
  readonly role: iam.IRole;
  setEnv(name: (typeof ENV)[keyof typeof ENV], value: string): unknown;
}

/** Athena descriptions are limited to 1024 characters; the parameters are listed because `?` says nothing. */
const describeQuery = (query: NamedQuery): string => {
  const withParameters =
    query.parameters.length > 0
      ? `${query.description} Parameters, in order: ${query.parameters.map((p) => `${p.name} (${p.type}): ${p.description}`).join('; ')}.`
      : query.description;
  return withParameters.slice(0, 1024);
};
