import { type Duration, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, type NodejsFunctionProps, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lib/config.js';
import { LEDGER_TABLE } from '../../lib/ledger/tableDefinition.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { acknowledge, acknowledgeWildcardResource } from '../nag.js';
import { fromRepoRoot } from './paths.js';
import { type BundleFolder, bundleFolder, folderPath, PREBUNDLED, prebundledFunction } from './prebundled.js';

/**
 * `update`: read, and change existing or new items by UpdateItem only (never replace one by PutItem) —
 * what a writer of the suppression list needs (lib/ledger/DynamoSuppressionList.ts writes by update only).
 */
export type TableAccess = 'read' | 'update' | 'readwrite';

/**
 * The item-level actions every reader or writer of the tables uses (GetItem, Query, PutItem, UpdateItem):
 * no Scan, no delete (rows leave by TTL only), no batch or transaction actions, no table management. The
 * two narrower extras some code needs (the gate facts' BatchGetItem, the sweep's seal DeleteItem) are
 * granted by LedgerTables.bindTo, named by that code.
 */
const TABLE_ACTIONS: Record<TableAccess, string[]> = {
  read: ['dynamodb:GetItem', 'dynamodb:Query'],
  update: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
  readwrite: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
};

/** The statement id's access word: `LedgerRead`, `SuppressionUpdate`, `SuppressionReadWrite`, … */
const ACCESS_SID: Record<TableAccess, string> = { read: 'Read', update: 'Update', readwrite: 'ReadWrite' };

export interface SendproofFunctionProps {
  /** Repository-relative entry, e.g. `functions/dispatch/index.ts`; the export is always `handler`. */
  entry: string;
  description: string;
  timeout: Duration;
  memorySize?: number;
  logRetention?: logs.RetentionDays;
  /** Hard cap on concurrent executions; absent: the account pool. */
  reservedConcurrency?: number;
  /**
   * Folders copied next to the bundle (e.g. `templates`, repository-relative, or `{ source, target }` with
   * an absolute source), found at run time under `LAMBDA_TASK_ROOT` (see `bundledPath`).
   */
  copyIntoBundle?: Array<string | BundleFolder>;
}

/**
 * Construct-tree context key NotificationLedger sets from its `tracing` prop (default on): every
 * SendproofFunction and the reconcile state machine below it read it, so one prop turns X-Ray off for all.
 */
export const TRACING_CONTEXT = 'sendproof:internal:tracing';

/** Whether X-Ray tracing is on for constructs under `scope` (on unless a NotificationLedger turned it off). */
export const tracingOn = (scope: Construct): boolean => scope.node.tryGetContext(TRACING_CONTEXT) !== false;

/** Memory of every Sendproof function unless its construct says otherwise (the cost model bills GB-s at it). */
export const DEFAULT_FUNCTION_MEMORY_MB = 512;

/** Where Lambda unpacks the bundle; a folder copied with `copyIntoBundle` lives below it. */
export const LAMBDA_TASK_ROOT = '/var/task';
export const bundledPath = (folder: string): string => `${LAMBDA_TASK_ROOT}/${folder}`;

/**
 * One Sendproof Lambda with the defaults decided once: Node 22 on arm64, its own log group with a retention,
 * X-Ray tracing (unless turned off: `tracingOn`), Powertools service/namespace, and a role with no managed policies.
 *
 * The `bind*`/`allow*` methods are the only way to give a function access to something: each one sets the
 * environment variable the function reads (names from lib/config.ts) AND adds the IAM grant for exactly that
 * resource in the same call, so configuration and permissions cannot drift apart.
 */
export class SendproofFunction extends Construct {
  /** A NodejsFunction from the repository's sources; a plain Function on the pre-built bundle in the package. */
  readonly fn: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: SendproofFunctionProps) {
    super(scope, id);
    // Our own role instead of the default one: the default attaches AWSLambdaBasicExecutionRole, which may
    // write to every log group in the account. This role may write only to this function's log group.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `${props.description} (Sendproof)`,
    });
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? logs.RetentionDays.THREE_MONTHS,
    });
    this.logGroup.grantWrite(this.role);

    const folders = (props.copyIntoBundle ?? []).map(bundleFolder);
    const functionProps: NodejsFunctionProps = {
      entry: fromRepoRoot(props.entry),
      handler: 'handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? DEFAULT_FUNCTION_MEMORY_MB,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      tracing: tracingOn(this) ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
      reservedConcurrentExecutions: props.reservedConcurrency,
      environment: {
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        NODE_OPTIONS: '--enable-source-maps',
      },
      depsLockFilePath: fromRepoRoot('package-lock.json'),
      projectRoot: fromRepoRoot('.'),
      bundling: {
        format: OutputFormat.ESM,
        // ESM output still meets CommonJS dependencies that call require(); give them one.
        banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
        mainFields: ['module', 'main'],
        minify: true,
        sourceMap: true,
        // Mapped stack traces without the sources embedded (scripts/lambdaBundle.mjs says why).
        sourcesContent: false,
        target: 'node24',
        // The AWS SDK is bundled, not taken from the runtime: the clients in lib/aws/clients.ts are pinned
        // and tested at those versions (e.g. SES/SMS sends with maxAttempts 1), and the runtime's copy moves
        // on its own schedule. A few hundred KB more per function buys "what was tested is what runs".
        bundleAwsSDK: true,
        // Never Docker: esbuild is a local devDependency, so synth works offline.
        forceDockerBundling: false,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          // NodejsFunction writes one file and cannot split (it always passes --outfile): the bundle is
          // rebuilt with code splitting by scripts/lambdaBundle.mjs, the one definition of the esbuild
          // options the package build and the cold start benchmark use too. Lazily imported clients (SES,
          // SMS, S3, KMS) then stay in chunks a cold start never reads.
          afterBundling: (inputDir: string, outputDir: string) => [
            `node "${inputDir}/scripts/lambdaBundle.mjs" "${props.entry}" "${outputDir}"`,
            ...folders.map((folder) => `cp -R "${folderPath(folder)}" "${outputDir}/${folder.target}"`),
          ],
        },
      },
    };
    // The installed package deploys the bundles it ships (built with these same esbuild options by
    // scripts/build.mjs), so a consumer's synth needs neither esbuild nor Docker.
    this.fn = PREBUNDLED
      ? prebundledFunction(this, 'Function', functionProps, props.entry, folders)
      : new NodejsFunction(this, 'Function', functionProps);

    acknowledge(
      this.role,
      'AwsSolutions-IAM5[Resource::*]',
      'X-Ray PutTraceSegments/PutTelemetryRecords (and, for a stream consumer, dynamodb:ListStreams) support no resource-level permissions; every other statement of this role names its resources.',
    );
    acknowledge(
      this.fn,
      'AwsSolutions-L1',
      'Sendproof targets Node.js 24, the newest runtime aws-cdk-lib offers here: the bundles are built for it (target node24).',
    );
  }

  get functionArn(): string {
    return this.fn.functionArn;
  }

  /** An environment value that carries no permission (a name, a JSON policy list, a number). */
  setEnv(name: (typeof ENV)[keyof typeof ENV], value: string): this {
    this.fn.addEnvironment(name, value);
    return this;
  }

  /**
   * The ledger table under ENV.ledgerTable. Grants item-level actions on the table and its attention index
   * (the index by name, not `index/*`), never Scan.
   */
  bindLedger(table: dynamodb.ITable, access: TableAccess): this {
    this.fn.addEnvironment(ENV.ledgerTable, table.tableName);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: `Ledger${ACCESS_SID[access]}`,
        actions: TABLE_ACTIONS[access],
        resources: [table.tableArn, `${table.tableArn}/index/${LEDGER_TABLE.attentionIndex.name}`],
      }),
    );
    return this;
  }

  /** The suppression list under ENV.suppressionTable. */
  bindSuppression(table: dynamodb.ITable, access: TableAccess): this {
    this.fn.addEnvironment(ENV.suppressionTable, table.tableName);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: `Suppression${ACCESS_SID[access]}`,
        actions: TABLE_ACTIONS[access],
        resources: [table.tableArn],
      }),
    );
    return this;
  }

  /** The content-hash HMAC key: passed by ARN, read at cold start. */
  bindContentHashSecret(secret: secretsmanager.ISecret): this {
    this.fn.addEnvironment(ENV.contentHashSecretArn, secret.secretArn);
    secret.grantRead(this.role);
    return this;
  }

  /**
   * The KMS key that seals parked intents (AWS Encryption SDK): the dispatcher encrypts and decrypts
   * with it; nothing else in the stack may (the sweep only re-publishes a notice naming the seal).
   */
  bindSealKey(key: kms.IKey): this {
    this.fn.addEnvironment(ENV.sealKeyArn, key.keyArn);
    key.grant(this.role, 'kms:GenerateDataKey', 'kms:Decrypt');
    return this;
  }

  /**
   * The intake queue by URL. `send`: publish (the sweep's resume notices); `visibility`: move a received
   * message's visibility to the ledger's due time (the event source already consumes).
   */
  bindIntakeQueue(queue: sqs.IQueue, access: 'send' | 'visibility'): this {
    this.fn.addEnvironment(ENV.queueUrl, queue.queueUrl);
    if (access === 'send') queue.grant(this.role, 'sqs:SendMessage');
    else queue.grant(this.role, 'sqs:ChangeMessageVisibility');
    return this;
  }

  /** The provider credentials (Resend/Twilio/REST) as one Secrets Manager secret, passed by ARN. */
  bindProviderSecret(secret: secretsmanager.ISecret): this {
    this.fn.addEnvironment(ENV.providerSecretArn, secret.secretArn);
    secret.grantRead(this.role);
    return this;
  }

  /**
   * Write-only access to the audit archive: s3:PutObject under one prefix, nothing else (no Get, no
   * Delete; Object Lock would refuse a delete anyway).
   */
  bindArchiveWriter(bucket: s3.IBucket, prefix: string): this {
    const objects = bucket.arnForObjects(`${prefix}*`);
    this.fn.addEnvironment(ENV.archiveBucket, bucket.bucketName);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ArchivePutOnly',
        // PutObjectRetention: each object carries its purpose's COMPLIANCE retain-until date.
        actions: ['s3:PutObject', 's3:PutObjectRetention'],
        resources: [objects],
      }),
    );
    if (bucket.encryptionKey) bucket.encryptionKey.grantEncrypt(this.role);
    acknowledgeWildcardResource(
      this.role,
      objects,
      'The archiver writes one new object per batch under the transitions prefix; keys are not known in advance. PutObject only.',
    );
    return this;
  }

  /** SES v2 SendEmail on exactly the sending identity and the configuration set. */
  bindEmailSender(sender: { identityArn: string; configurationSetName: string; fromAddress: string }): this {
    this.fn.addEnvironment(ENV.emailFrom, sender.fromAddress);
    this.fn.addEnvironment(ENV.sesConfigurationSet, sender.configurationSetName);
    const stack = Stack.of(this);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SesSendEmail',
        actions: ['ses:SendEmail'],
        resources: [
          sender.identityArn,
          stack.formatArn({
            service: 'ses',
            resource: 'configuration-set',
            resourceName: sender.configurationSetName,
          }),
        ],
      }),
    );
    return this;
  }

  /** AWS End User Messaging SMS SendTextMessage on exactly the origination identity and configuration set. */
  bindSmsSender(sender: { originationIdentityArn: string; configurationSetName: string }): this {
    this.fn.addEnvironment(ENV.smsOriginationIdentity, sender.originationIdentityArn);
    this.fn.addEnvironment(ENV.smsConfigurationSet, sender.configurationSetName);
    const stack = Stack.of(this);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SmsSendTextMessage',
        actions: ['sms-voice:SendTextMessage'],
        resources: [
          sender.originationIdentityArn,
          stack.formatArn({
            service: 'sms-voice',
            resource: 'configuration-set',
            resourceName: sender.configurationSetName,
          }),
        ],
      }),
    );
    return this;
  }

  /** Read access to the objects intents reference as attachments (the location the user chose). */
  allowAttachmentsRead(bucket: s3.IBucket, prefix: string): this {
    const objects = bucket.arnForObjects(`${prefix}*`);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'AttachmentsRead',
        actions: ['s3:GetObject'],
        resources: [objects],
      }),
    );
    if (bucket.encryptionKey) bucket.encryptionKey.grantDecrypt(this.role);
    acknowledgeWildcardResource(
      this.role,
      objects,
      'Attachments are arbitrary objects under the configured attachments prefix; GetObject only.',
    );
    return this;
  }
}
