import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The AWS SDK command recorder: which command each Lambda function sends, on which resource. DynamoDB
 * Local and fauxqs ignore IAM, so the integration suite cannot fail on a missing grant by itself; the
 * recorder lets test/infra/iamCommands.test.ts hold every command the suite issued to the function's
 * synthesized role.
 *
 * Switched on by the environment (test runs only; no construct ever sets it, and test/infra asserts that):
 *   SENDPROOF_AWS_COMMAND_LOG=<directory>   every process appends JSON lines to <directory>/<pid>.jsonl
 * or in-process by `captureAwsCommands()` (unit tests). It is read once, when this module loads, and
 * consulted once per client, when lib/aws builds it: with recording off no middleware is added, so a
 * deployed function pays one property read per client and nothing per command.
 *
 * A client records only when it is built for a function (`ClientOptions.caller`): the entries and the
 * per-function wiring pass it (lib/config.ts `functionConfig`), and so do the local stand-ins for what
 * Lambda itself does on the function's role (the SQS poller and the stream poller, `via: 'event-source'`).
 * CLI and test-setup clients carry no caller and record nothing: they run with an operator's credentials.
 */

/** Which Lambda function's execution role a client's commands are authorized against. */
export interface AwsCaller {
  /** A function name of lib/config.ts FUNCTION_SETTINGS (`dispatch`, `reconcile`, …). */
  function: string;
  /**
   * `event-source`: what the Lambda event source mapping does for the function (receive and delete SQS
   * messages, read a DynamoDB stream, send to its on-failure destination): AWS authorizes those calls
   * against the function's execution role too.
   */
  via?: 'event-source';
  /**
   * The function's configuration: a resource a command names is recorded by the setting that holds it
   * (`ledgerTable`, `queueUrl`, …), which the checker resolves through the function's synthesized
   * environment to the resource in the template.
   */
  settings?: Readonly<Record<string, unknown>>;
}

export type ResourceKind =
  | 'table'
  | 'index'
  | 'stream'
  | 'queue'
  | 'bucket'
  | 'object'
  | 'key'
  | 'email-identity'
  | 'configuration-set'
  | 'origination-identity'
  | 'workgroup'
  | 'event-bus'
  | 'any';

export interface ResourceRef {
  kind: ResourceKind;
  /** The setting of the caller's configuration that names the resource; absent when none does. */
  setting?: string;
  /** The name as the command gave it (a local table name, a queue URL …), for the failure message. */
  name: string;
  /** `index`: the index name. */
  index?: string;
  /**
   * `object` and `bucket` (ListObjectsV2): the key or prefix up to its first `/`, then `…`; item
   * commands on `table`: the partition key up to its first `#`, then `…` (what an IAM `s3:prefix` or
   * `dynamodb:LeadingKeys` condition would be matched against; the rest is not recorded).
   */
  keyPrefix?: string;
}

export interface CommandRecord {
  function: string;
  via?: 'event-source';
  /** The SDK client: `dynamodb`, `dynamodb-streams`, `sqs`, `s3`, `sesv2`, `sms-voice-v2`, `athena`, `events`, `kms`. */
  service: string;
  /** The operation, e.g. `BatchGetItem` (lib-dynamodb's `BatchGetCommand` sends `BatchGetItem`). */
  command: string;
  resources: ResourceRef[];
  /** Facts about the input that change the IAM actions needed (`object-lock-retention` on PutObject). */
  flags?: string[];
  /** `encryption-sdk`: a KMS call the AWS Encryption SDK's KMS keyring makes (recorded by the sealer). */
  source?: 'encryption-sdk';
}

export const COMMAND_LOG_ENV = 'SENDPROOF_AWS_COMMAND_LOG';

const logDir = process.env[COMMAND_LOG_ENV] || undefined;
const captures = new Set<CommandRecord[]>();
const written = new Set<string>();

/** Test hook: records every command of every client built (with a caller) from now on, until stop(). */
export const captureAwsCommands = (): { records: CommandRecord[]; stop: () => void } => {
  const records: CommandRecord[] = [];
  captures.add(records);
  return { records, stop: () => captures.delete(records) };
};

const recording = () => logDir !== undefined || captures.size > 0;

const emit = (record: CommandRecord): void => {
  for (const sink of captures) sink.push(record);
  if (!logDir) return;
  const line = JSON.stringify(record);
  // One line per distinct command shape per process: the suite sends the same GetItem thousands of times.
  if (written.has(line)) return;
  written.add(line);
  mkdirSync(logDir, { recursive: true });
  // Synchronous: a crash worker SIGKILLs itself right after a command and must not lose the line.
  appendFileSync(join(logDir, `${process.pid}.jsonl`), `${line}\n`);
};

const SERVICES: Record<string, string> = {
  DynamoDBClient: 'dynamodb',
  DynamoDBStreamsClient: 'dynamodb-streams',
  SQSClient: 'sqs',
  S3Client: 's3',
  SESv2Client: 'sesv2',
  PinpointSMSVoiceV2Client: 'sms-voice-v2',
  AthenaClient: 'athena',
  EventBridgeClient: 'events',
  KMSClient: 'kms',
};

const settingOf = (caller: AwsCaller, value: string): string | undefined => {
  for (const [setting, configured] of Object.entries(caller.settings ?? {}))
    if (typeof configured === 'string' && configured === value) return setting;
  return undefined;
};

const ref = (
  caller: AwsCaller,
  kind: ResourceKind,
  name: string,
  extra: Partial<ResourceRef> = {},
  lookup: string = name,
): ResourceRef => {
  const setting = settingOf(caller, lookup);
  return { kind, name, ...(setting ? { setting } : {}), ...extra };
};

const upTo = (value: string, separator: string): string => {
  const at = value.indexOf(separator);
  return at < 0 ? '' : `${value.slice(0, at + 1)}…`;
};

/** A DynamoDB key attribute as the document client (plain) or the raw client (`{ S: … }`) gives it. */
const keyString = (attribute: unknown): string | undefined => {
  if (typeof attribute === 'string') return attribute;
  const s = (attribute as { S?: unknown } | undefined)?.S;
  return typeof s === 'string' ? s : undefined;
};

const partitionPrefix = (item: unknown): string | undefined => {
  const pk = keyString((item as Record<string, unknown> | undefined)?.pk);
  return pk === undefined ? undefined : upTo(pk, '#');
};

type Input = Record<string, unknown>;
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

const dynamoResources = (caller: AwsCaller, command: string, input: Input): ResourceRef[] => {
  const table = str(input.TableName);
  if (command === 'BatchGetItem' || command === 'BatchWriteItem')
    return Object.keys((input.RequestItems as Input | undefined) ?? {}).map((t) => ref(caller, 'table', t));
  if (command === 'TransactWriteItems' || command === 'TransactGetItems')
    return ((input.TransactItems as Input[] | undefined) ?? []).flatMap((item) =>
      Object.values(item).flatMap((op) => {
        const name = str((op as Input).TableName);
        return name
          ? [ref(caller, 'table', name, { keyPrefix: partitionPrefix((op as Input).Key) ?? '' })]
          : [];
      }),
    );
  if (!table) return [];
  const index = str(input.IndexName);
  if (index) return [ref(caller, 'index', table, { index })];
  const key = partitionPrefix(input.Key) ?? partitionPrefix(input.Item);
  return [ref(caller, 'table', table, key === undefined ? {} : { keyPrefix: key })];
};

/** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>`: the stream of a table. */
const streamTable = (arn: string): string => /:table\/([^/]+)\/stream\//.exec(arn)?.[1] ?? arn;

const resourcesOf = (
  caller: AwsCaller,
  service: string,
  command: string,
  input: Input,
): { resources: ResourceRef[]; flags?: string[] } => {
  switch (service) {
    case 'dynamodb':
      return { resources: dynamoResources(caller, command, input) };
    case 'dynamodb-streams': {
      const arn = str(input.StreamArn);
      if (arn) return { resources: [ref(caller, 'stream', arn, {}, streamTable(arn))] };
      const table = str(input.TableName);
      return { resources: table ? [ref(caller, 'any', table)] : [{ kind: 'any', name: '*' }] };
    }
    case 'sqs': {
      const url = str(input.QueueUrl);
      return { resources: url ? [ref(caller, 'queue', url)] : [] };
    }
    case 's3': {
      const bucket = str(input.Bucket);
      if (!bucket) return { resources: [] };
      const key = str(input.Key);
      if (key !== undefined)
        return {
          resources: [ref(caller, 'object', bucket, { keyPrefix: upTo(key, '/') })],
          ...(input.ObjectLockMode !== undefined || input.ObjectLockRetainUntilDate !== undefined
            ? { flags: ['object-lock-retention'] }
            : {}),
        };
      const prefix = str(input.Prefix);
      return {
        resources: [
          ref(caller, 'bucket', bucket, prefix === undefined ? {} : { keyPrefix: upTo(prefix, '/') }),
        ],
      };
    }
    case 'sesv2': {
      const resources: ResourceRef[] = [];
      const from = str(input.FromEmailAddressIdentityArn) ?? str(input.FromEmailAddress);
      if (from) resources.push(ref(caller, 'email-identity', from));
      const set = str(input.ConfigurationSetName);
      if (set) resources.push(ref(caller, 'configuration-set', set));
      return { resources };
    }
    case 'sms-voice-v2': {
      const resources: ResourceRef[] = [];
      const origin = str(input.OriginationIdentity);
      if (origin) resources.push(ref(caller, 'origination-identity', origin));
      const set = str(input.ConfigurationSetName);
      if (set) resources.push(ref(caller, 'configuration-set', set));
      return { resources };
    }
    case 'athena': {
      // Only StartQueryExecution names its workgroup; the others act on an execution of that workgroup.
      const workGroup = str(input.WorkGroup) ?? str(caller.settings?.athenaWorkGroup) ?? '(workgroup)';
      return { resources: [ref(caller, 'workgroup', workGroup)] };
    }
    case 'events': {
      // PutEvents names a bus per entry (absent: the account's `default` bus).
      const buses = new Set(
        ((input.Entries as Input[] | undefined) ?? []).map((e) => str(e.EventBusName) ?? 'default'),
      );
      return { resources: [...buses].map((bus) => ref(caller, 'event-bus', bus)) };
    }
    case 'kms': {
      const key = str(input.KeyId);
      return { resources: key ? [ref(caller, 'key', key)] : [] };
    }
    default:
      return { resources: [] };
  }
};

/** Records one command (exported for the Encryption SDK's KMS calls, which no lib/aws client makes). */
export const recordCommand = (
  caller: AwsCaller,
  service: string,
  command: string,
  input: Input,
  source?: CommandRecord['source'],
): void => {
  if (!recording()) return;
  const { resources, flags } = resourcesOf(caller, service, command, input);
  emit({
    function: caller.function,
    ...(caller.via ? { via: caller.via } : {}),
    service,
    command,
    resources,
    ...(flags ? { flags } : {}),
    ...(source ? { source } : {}),
  });
};

interface WithMiddleware {
  middlewareStack: {
    add(
      middleware: (
        next: (args: { input: unknown }) => Promise<unknown>,
        context: { clientName?: string; commandName?: string },
      ) => (args: { input: unknown }) => Promise<unknown>,
      options: { step: 'initialize'; name: string; override?: boolean },
    ): void;
  };
}

/**
 * Adds the recording middleware to a client built for `caller`, when recording is on; otherwise returns
 * the client untouched. The initialize step sees the command's input before any marshalling, and runs
 * before the request is sent, so a command the service (or the network) refuses is recorded too.
 */
export const withCommandLog = <C>(client: C, caller: AwsCaller | undefined): C => {
  if (!caller || !recording()) return client;
  (client as unknown as WithMiddleware).middlewareStack.add(
    (next, context) => async (args) => {
      const service = SERVICES[context.clientName ?? ''] ?? context.clientName ?? 'unknown';
      const command = (context.commandName ?? 'Unknown').replace(/Command$/, '');
      recordCommand(caller, service, command, (args.input ?? {}) as Input);
      return next(args);
    },
    { step: 'initialize', name: 'sendproofCommandLog', override: true },
  );
  return client;
};

/** Whether commands are being recorded (decided per client and per sealer, at construction). */
export const isRecordingAwsCommands = (): boolean => recording();

/**
 * The KMS call the AWS Encryption SDK's KMS keyring makes (no lib/aws client sends it): a seal calls
 * GenerateDataKey on the generator key, an open calls Decrypt ("Required permissions for AWS KMS
 * keyrings", https://docs.aws.amazon.com/encryption-sdk/latest/developer-guide/use-kms-keyring.html).
 * Recorded whichever keyring runs: locally it is a raw AES keyring, deployed it is the KMS keyring on the
 * key the setting names, and the deployed role is what the record is checked against.
 */
export const recordKeyringCall = (
  caller: AwsCaller,
  command: 'GenerateDataKey' | 'Decrypt',
  keySetting: string,
): void => {
  if (!recording()) return;
  emit({
    function: caller.function,
    ...(caller.via ? { via: caller.via } : {}),
    service: 'kms',
    command,
    resources: [{ kind: 'key', setting: keySetting, name: `(${keySetting})` }],
    source: 'encryption-sdk',
  });
};
