import type { CommandRecord, ResourceRef } from '../../lib/aws/commandLog.js';
import { ENV } from '../../lib/config.js';

/*
 * What IAM needs for each recorded AWS SDK command, and whether a synthesized role allows it.
 *
 * Operation → action follows the Service Authorization Reference (one action per operation unless noted):
 * - DynamoDB, https://docs.aws.amazon.com/service-authorization/latest/reference/list_dynamodb.html
 *   ("The following table maps API operations to the IAM actions they authorize"): GetItem, PutItem,
 *   UpdateItem, DeleteItem, Query, Scan, BatchGetItem, BatchWriteItem, DescribeTable → dynamodb:<same>.
 *   lib-dynamodb's document commands are not operations of their own: GetCommand sends GetItem,
 *   BatchGetCommand sends BatchGetItem (the recorder sees the operation the client sends). A Query or
 *   Scan with IndexName is authorized on the index ARN (`table/<t>/index/<i>`). BatchGetItem is
 *   authorized per table in RequestItems. The `dynamodb:LeadingKeys` condition key filters by partition
 *   key (the "Condition keys for Amazon DynamoDB" table of the same page).
 * - DynamoDB Streams (the stream event source): DescribeStream, GetRecords, GetShardIterator on the stream
 *   ARN, ListStreams on "*" → dynamodb:<same> (same page; the stream ARN is the `stream` resource type).
 * - Amazon SQS, https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-api-permissions-reference.html:
 *   SendMessageBatch, DeleteMessageBatch and ChangeMessageVisibilityBatch are authorized by
 *   sqs:SendMessage, sqs:DeleteMessage and sqs:ChangeMessageVisibility ("Specifying SendMessage,
 *   DeleteMessage, or ChangeMessageVisibility … also grants permissions for the corresponding batch
 *   versions of those actions", AddPermission in the SQS API reference).
 * - Amazon S3, https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html:
 *   GetObject and HeadObject → s3:GetObject; ListObjectsV2 → s3:ListBucket on the bucket ARN (condition
 *   key s3:prefix); PutObject → s3:PutObject, and with x-amz-object-lock-mode / retain-until-date it
 *   also places an Object Retention configuration, for which "Users or accounts require the
 *   s3:PutObjectRetention permission" (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObjectRetention.html).
 * - SES (v1 and v2 share the `ses` prefix), https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonses.html:
 *   SendEmail → ses:SendEmail on the sending identity and the configuration set.
 * - End User Messaging SMS and Voice V2 ("service prefix: sms-voice"),
 *   https://docs.aws.amazon.com/service-authorization/latest/reference/list_pinpoint-sms-voice-v2.html:
 *   SendTextMessage → sms-voice:SendTextMessage (prefix `sms-voice`, not the SDK's pinpoint-sms-voice-v2)
 *   on the origination identity and the configuration set.
 * - Athena, https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonathena.html:
 *   StartQueryExecution, GetQueryExecution, GetQueryResults, StopQueryExecution → athena:<same> on the
 *   workgroup.
 * - Amazon EventBridge, https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoneventbridge.html:
 *   PutEvents → events:PutEvents on the event-bus resource (`event-bus/<name>`).
 * - AWS KMS, https://docs.aws.amazon.com/service-authorization/latest/reference/list_awskeymanagementservice.html:
 *   Sign → kms:Sign. The AWS Encryption SDK's KMS keyring calls GenerateDataKey to seal and Decrypt to open
 *   (https://docs.aws.amazon.com/encryption-sdk/latest/developer-guide/use-kms-keyring.html, "Required
 *   permissions for AWS KMS keyrings"); the sealer records those two (lib/dispatchRuntime.ts).
 * A command with no entry here fails the check: add its action with its source.
 */
const ACTIONS: Record<string, Record<string, string[]>> = {
  dynamodb: Object.fromEntries(
    [
      'GetItem',
      'PutItem',
      'UpdateItem',
      'DeleteItem',
      'Query',
      'Scan',
      'BatchGetItem',
      'BatchWriteItem',
      'DescribeTable',
    ].map((op) => [op, [`dynamodb:${op}`]]),
  ),
  'dynamodb-streams': Object.fromEntries(
    ['DescribeStream', 'GetRecords', 'GetShardIterator', 'ListStreams'].map((op) => [op, [`dynamodb:${op}`]]),
  ),
  sqs: {
    SendMessage: ['sqs:SendMessage'],
    SendMessageBatch: ['sqs:SendMessage'],
    ReceiveMessage: ['sqs:ReceiveMessage'],
    DeleteMessage: ['sqs:DeleteMessage'],
    DeleteMessageBatch: ['sqs:DeleteMessage'],
    ChangeMessageVisibility: ['sqs:ChangeMessageVisibility'],
    ChangeMessageVisibilityBatch: ['sqs:ChangeMessageVisibility'],
    GetQueueAttributes: ['sqs:GetQueueAttributes'],
    GetQueueUrl: ['sqs:GetQueueUrl'],
  },
  s3: {
    GetObject: ['s3:GetObject'],
    HeadObject: ['s3:GetObject'],
    PutObject: ['s3:PutObject'],
    ListObjectsV2: ['s3:ListBucket'],
  },
  sesv2: { SendEmail: ['ses:SendEmail'] },
  'sms-voice-v2': { SendTextMessage: ['sms-voice:SendTextMessage'] },
  athena: Object.fromEntries(
    ['StartQueryExecution', 'GetQueryExecution', 'GetQueryResults', 'StopQueryExecution'].map((op) => [
      op,
      [`athena:${op}`],
    ]),
  ),
  events: { PutEvents: ['events:PutEvents'] },
  kms: Object.fromEntries(
    ['Sign', 'GetPublicKey', 'GenerateDataKey', 'Decrypt', 'Encrypt'].map((op) => [op, [`kms:${op}`]]),
  ),
};

/** The IAM actions one recorded command needs (undefined: no mapping, which fails the check). */
export const actionsFor = (record: CommandRecord): string[] | undefined => {
  const actions = ACTIONS[record.service]?.[record.command];
  if (!actions) return undefined;
  return record.flags?.includes('object-lock-retention') ? [...actions, 's3:PutObjectRetention'] : actions;
};

// --- CloudFormation values as comparable strings ---------------------------------------------------------

export interface RenderContext {
  region: string;
  account: string;
}

/**
 * A CloudFormation value as a string in which a resource stays symbolic: `{Ref: X}` → `{X}`,
 * `{Fn::GetAtt: [X, Arn]}` → `{X.Arn}`, pseudo parameters → their values, Fn::Join → the joined parts.
 * A policy's Resource and a function's environment render the same way, so an ARN built from the
 * environment can be matched (with IAM wildcards) against the policy's resources.
 */
export const render = (value: unknown, ctx: RenderContext): string => {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if ('Ref' in v) {
      const ref = String(v.Ref);
      const pseudo: Record<string, string> = {
        'AWS::Partition': 'aws',
        'AWS::Region': ctx.region,
        'AWS::AccountId': ctx.account,
        'AWS::URLSuffix': 'amazonaws.com',
      };
      return pseudo[ref] ?? `{${ref}}`;
    }
    if ('Fn::GetAtt' in v) {
      const [id, attribute] = v['Fn::GetAtt'] as [string, string];
      return `{${id}.${attribute}}`;
    }
    if ('Fn::Join' in v) {
      const [separator, parts] = v['Fn::Join'] as [string, unknown[]];
      return parts.map((p) => render(p, ctx)).join(separator);
    }
  }
  return JSON.stringify(value);
};

/** IAM's wildcards: `*` any run of characters (`/` included), `?` one character. Case-sensitive. */
export const wildcardMatch = (pattern: string, value: string, ignoreCase = false): boolean => {
  const regex = new RegExp(
    `^${pattern
      .split('')
      .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
      .join('')}$`,
    ignoreCase ? 'is' : 's',
  );
  return regex.test(value);
};

// --- the synthesized side --------------------------------------------------------------------------------

export interface PolicyStatement {
  Sid?: string;
  Effect: string;
  Action?: string | string[];
  Resource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

/** One function as synthesized: its role's statements, its environment, its event sources. */
export interface DeployedFunction {
  name: string;
  statements: PolicyStatement[];
  env: Record<string, unknown>;
  /** Rendered ARNs the function's event source mappings read from or send failures to. */
  eventSourceArns: string[];
}

/** The resource a recorded command acts on, as ARNs the policy must allow (any one of them). */
export interface ExpectedResource {
  /** What the failure message calls it. */
  label: string;
  arns: string[];
  /** A condition value the command carries: `s3:prefix`, `dynamodb:LeadingKeys`. */
  conditionValues?: Record<string, string>;
  /** Why no ARN could be derived (a setting the deployed function lacks …): the check fails with it. */
  problem?: string;
}

const ENV_OF_SETTING = ENV as Record<string, string>;

const example = (prefix: string | undefined): string | undefined =>
  prefix === undefined ? undefined : prefix.endsWith('…') ? `${prefix.slice(0, -1)}x` : `${prefix}x`;

/**
 * Resolves one recorded resource to the ARNs it has in the deployment: through the setting that named it
 * locally and the value the synthesized function's environment gives that setting. Event-source records
 * resolve to the function's event source mappings; an S3 object no setting names is an attachment, read
 * from the configured attachments location.
 */
export const expectedResource = (
  record: CommandRecord,
  resource: ResourceRef,
  fn: DeployedFunction,
  ctx: RenderContext & { attachmentsBucketArn?: string },
): ExpectedResource => {
  const arn = (service: string, rest: string) => `arn:aws:${service}:${ctx.region}:${ctx.account}:${rest}`;
  const leading = example(resource.keyPrefix);
  if (record.via === 'event-source') {
    if (record.command === 'ListStreams')
      return { label: 'all resources ("*": ListStreams has no resource type)', arns: ['*'] };
    // GetRecords names only a shard iterator: it reads the stream the mapping reads.
    return {
      label: `the event source of ${fn.name} (${resource.name})`,
      arns: fn.eventSourceArns,
      ...(fn.eventSourceArns.length ? {} : { problem: `${fn.name} has no event source mapping` }),
    };
  }
  if (!resource.setting) {
    if (resource.kind === 'object' && record.command === 'GetObject' && ctx.attachmentsBucketArn)
      return {
        label: `an attachment (${resource.name}/${resource.keyPrefix ?? ''})`,
        arns: [`${ctx.attachmentsBucketArn}/${example(resource.keyPrefix) ?? 'x'}`],
      };
    return {
      label: resource.name,
      arns: [],
      problem: `no setting of ${fn.name}'s configuration names ${resource.kind} "${resource.name}"`,
    };
  }
  const envName = ENV_OF_SETTING[resource.setting];
  const deployed = envName ? fn.env[envName] : undefined;
  const label = `${resource.setting}${envName ? ` (${envName})` : ''}`;
  if (deployed === undefined)
    return {
      label,
      arns: [],
      problem: `the deployed ${fn.name} function has no ${envName ?? resource.setting} in its environment, yet its code used it`,
    };
  const value = render(deployed, ctx);
  // `{X}` is a Ref: a table's, bucket's or config set's name, a queue's URL; its ARN is `{X.Arn}`.
  const refArn = /^\{([^.}]+)\}$/.test(value) ? `${value.slice(0, -1)}.Arn}` : value;
  switch (resource.kind) {
    case 'table':
      return {
        label,
        arns: [refArn],
        ...(leading !== undefined ? { conditionValues: { 'dynamodb:LeadingKeys': leading } } : {}),
      };
    case 'index':
      return { label: `${label} index ${resource.index}`, arns: [`${refArn}/index/${resource.index}`] };
    case 'queue':
      return { label, arns: [refArn] };
    case 'object':
      return { label: `${label} object ${resource.keyPrefix ?? ''}`, arns: [`${refArn}/${leading ?? 'x'}`] };
    case 'bucket':
      return {
        label,
        arns: [refArn],
        ...(leading !== undefined ? { conditionValues: { 's3:prefix': leading } } : {}),
      };
    case 'key':
      return { label, arns: [value] };
    case 'email-identity': {
      const address = value;
      const domain = address.split('@')[1] ?? address;
      return { label, arns: [arn('ses', `identity/${address}`), arn('ses', `identity/${domain}`)] };
    }
    case 'configuration-set':
      return {
        label,
        arns: [
          record.service === 'sesv2'
            ? arn('ses', `configuration-set/${value}`)
            : arn('sms-voice', `configuration-set/${value}`),
        ],
      };
    case 'origination-identity':
      return { label, arns: [value] };
    case 'workgroup':
      return { label, arns: [arn('athena', `workgroup/${value}`)] };
    case 'event-bus':
      return { label, arns: [refArn.startsWith('{') ? refArn : arn('events', `event-bus/${value}`)] };
    default:
      return { label, arns: [value] };
  }
};

const list = (value: unknown): unknown[] =>
  Array.isArray(value) ? value : value === undefined ? [] : [value];

/** Evaluates the conditions this check knows; any other condition key makes the statement not count. */
const conditionsHold = (
  condition: PolicyStatement['Condition'],
  values: Record<string, string> | undefined,
): boolean => {
  if (!condition) return true;
  for (const [operator, keys] of Object.entries(condition)) {
    for (const [key, expected] of Object.entries(keys)) {
      const actual = values?.[key];
      const patterns = list(expected).map(String);
      const like = operator.endsWith('StringLike');
      const known = ['StringLike', 'StringEquals', 'ForAllValues:StringLike', 'ForAllValues:StringEquals'];
      if (!known.includes(operator)) return false;
      if (actual === undefined) return false;
      if (!patterns.some((p) => (like ? wildcardMatch(p, actual) : p === actual))) return false;
    }
  }
  return true;
};

/** The statements that allow `action` on at least one of the ARNs (with the command's condition values). */
export const allowingStatements = (
  statements: readonly PolicyStatement[],
  action: string,
  expected: ExpectedResource,
  ctx: RenderContext,
): PolicyStatement[] =>
  statements.filter(
    (s) =>
      s.Effect === 'Allow' &&
      list(s.Action).some((a) => wildcardMatch(String(a), action, true)) &&
      list(s.Resource).some((r) => {
        const pattern = render(r, ctx);
        return expected.arns.some((a) => wildcardMatch(pattern, a));
      }) &&
      conditionsHold(s.Condition, expected.conditionValues),
  );

export const denyingStatements = (
  statements: readonly PolicyStatement[],
  action: string,
  expected: ExpectedResource,
  ctx: RenderContext,
): PolicyStatement[] =>
  allowingStatements(
    statements.map((s) => ({ ...s, Effect: s.Effect === 'Deny' ? 'Allow' : 'Ignore' })),
    action,
    expected,
    ctx,
  );
