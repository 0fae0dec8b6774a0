import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { dynamoClient, sqsClient } from '../aws/clients.js';
import { s3Client } from '../aws/storageClients.js';
import { ENV } from '../config.js';
import { ledgerCreateTableInput, suppressionCreateTableInput } from '../ledger/tableDefinition.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../observability.js';
import { fromPackageRoot } from '../packageRoot.js';
import { INTAKE_QUEUE, LOCAL_TIMING } from '../queueDefinition.js';
import { type RunningProviderSimulator, startProviderSimulator } from '../simulator/ProviderSimulator.js';
import { generateSigningKeys } from '../simulator/webhookSigners.js';
import { type RunningDynamoDbLocal, startDynamoDbLocal } from './DynamoDbLocal.js';
import { freePort } from './ports.js';
import { cleanupStack, stopChildProcess } from './processes.js';
import { createIntakeQueue, startFauxqs } from './queues.js';
import { startSesLocal } from './sesLocal.js';

export interface LocalEndpoints {
  dynamodb: string;
  sqs: string;
  queueUrl: string;
  dlqUrl: string;
  s3: string;
  bucket: string;
  /** The archiver's on-failure destination: batches given up after the retries (for the backfill). */
  archiveFailuresUrl: string;
  ses: string;
  simulator: string;
  archiveDir: string;
  /** The evidence endpoint (POST /resend, /twilio, /sendgrid), served by the functions worker. */
  webhook?: string;
  /** The local event bus: every outcome event, one JSON line each (`sendproof events tail` follows it). */
  eventsLog?: string;
}

/** What `.local/state.json` holds: the endpoints plus what the CLI needs to find the tables. */
export interface LocalState extends LocalEndpoints {
  region: string;
  ledgerTable: string;
  suppressionTable: string;
  attachmentsBucket: string;
  emailTransport: 'ses' | 'simulator';
  /** The email failover order (SENDPROOF_EMAIL_PROVIDERS), when the stack was started with one. */
  emailProviders?: Array<'ses' | 'simulator'>;
  smsTransport: 'simulator';
  functionsLog: string;
  pids: { dynamodb: number; functions: number; stack: number };
  startedAt: string;
}

export interface LocalStackOptions {
  stateDir?: string;
  emailTransport?: 'ses' | 'simulator';
  /** Email failover between the local providers (`ses,simulator`): the first is the primary. */
  emailProviders?: Array<'ses' | 'simulator'>;
  smsTransport?: 'simulator';
  region?: string;
  /** Progress lines while starting ("starting DynamoDB Local…"). */
  progress?: (line: string) => void;
  /** Caller endpoints that get every outcome event by POST, as an EventBridge API destination would. */
  eventEndpoints?: ReadonlyArray<{ url: string; tenant?: string }>;
  /** More settings for every Sendproof process of the stack (e.g. SENDPROOF_PURPOSES, SENDPROOF_TEMPLATES_DIR). */
  env?: Readonly<Record<string, string>>;
}

export interface RunningLocalStack {
  state: LocalState;
  /** Environment that points Sendproof code (CLI, handlers) at this stack. */
  env: Record<string, string>;
  simulator: RunningProviderSimulator;
  stop(): Promise<void>;
}

/**
 * The functions worker: compiled JavaScript when this code runs from the build (dist/, including the CLI
 * bundle), TypeScript through tsx when it runs from the repository's sources.
 */
const COMPILED = !import.meta.url.endsWith('.ts');
export const WORKER_ENTRY = COMPILED
  ? fromPackageRoot('dist', 'lib', 'local', 'functionsWorker.js')
  : fileURLToPath(new URL('./functionsWorker.ts', import.meta.url));
export const DEFAULT_STATE_DIR = '.local';
export const stateFilePath = (stateDir = DEFAULT_STATE_DIR) => resolve(stateDir, 'state.json');

/**
 * Starts the whole pipeline on loopback with free ports: AWS's DynamoDB Local, fauxqs (SQS + S3),
 * aws-ses-v2-local (email with a web inbox), the provider simulator (SMS; a test double), and a child
 * process running the real handlers. Tables, queues and the bucket are created from the same
 * definitions the CDK app uses. `stop()` ends every server and child it started.
 */
export const startLocalStack = async (options: LocalStackOptions = {}): Promise<RunningLocalStack> => {
  const stateDir = resolve(options.stateDir ?? DEFAULT_STATE_DIR);
  const logDir = join(stateDir, 'logs');
  const archiveDir = join(stateDir, 'archive');
  const eventsDir = join(stateDir, 'events');
  mkdirSync(logDir, { recursive: true });
  mkdirSync(archiveDir, { recursive: true });
  const region = options.region ?? 'us-east-1';
  // With a failover order, its first provider is the channel's transport (as providersOf reads it).
  const emailTransport = options.emailProviders?.[0] ?? options.emailTransport ?? 'ses';
  const progress = options.progress ?? (() => undefined);
  const cleanups = cleanupStack();
  const { stopAll } = cleanups;
  try {
    progress('starting DynamoDB Local (Java)…');
    const dynamo: RunningDynamoDbLocal = await startDynamoDbLocal({ logDir });
    cleanups.push(() => dynamo.stop());

    progress('starting fauxqs (SQS + S3)…');
    const fauxqs = await startFauxqs();
    cleanups.push(fauxqs.stop);
    const awsLocal = fauxqs.endpoint;

    progress('starting aws-ses-v2-local (email inbox)…');
    const ses = await startSesLocal();
    cleanups.push(ses.stop);
    const sesUrl = ses.url;

    progress('starting the provider simulator (SMS; a test double)…');
    const simulator = await startProviderSimulator({ host: '127.0.0.1' });
    cleanups.push(() => simulator.stop());

    progress('creating tables, queues and buckets…');
    const ddb = dynamoClient({ region, endpoint: dynamo.endpoint });
    const ledgerTable = 'sendproof-ledger';
    const suppressionTable = 'sendproof-suppression';
    await ddb.send(new CreateTableCommand(ledgerCreateTableInput(ledgerTable)));
    await ddb.send(new CreateTableCommand(suppressionCreateTableInput(suppressionTable)));
    const sqs = sqsClient({ region, endpoint: awsLocal });
    const intake = await createIntakeQueue(sqs, {
      name: 'sendproof-intake',
      visibilityTimeoutSeconds: LOCAL_TIMING.visibilityTimeoutSeconds,
      retention: true,
    });
    const archiveFailures = await sqs.send(
      new CreateQueueCommand({ QueueName: 'sendproof-archive-failures' }),
    );
    const bucket = 'sendproof-archive';
    const attachmentsBucket = 'sendproof-attachments';
    const s3 = s3Client({ region, endpoint: awsLocal });
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new CreateBucketCommand({ Bucket: attachmentsBucket }));

    const webhookPort = await freePort();
    // SES sends go through the event emitter (in the functions worker), which proxies to the inbox and
    // feeds EventBridge-shaped SES events to the evidence function. The inbox stays reachable through it.
    const usesSes = emailTransport === 'ses' || (options.emailProviders ?? []).includes('ses');
    const sesEmitterPort = usesSes ? await freePort() : undefined;
    const sesEndpoint = sesEmitterPort ? `http://127.0.0.1:${sesEmitterPort}` : sesUrl;
    const env: Record<string, string> = {
      [ENV.region]: region,
      [ENV.ledgerTable]: ledgerTable,
      [ENV.suppressionTable]: suppressionTable,
      [ENV.archiveBucket]: bucket,
      [ENV.archiveMirrorDir]: archiveDir,
      [ENV.archiveFailuresUrl]: archiveFailures.QueueUrl!,
      [ENV.queueUrl]: intake.queueUrl,
      [ENV.dlqUrl]: intake.dlqUrl,
      [ENV.emailTransport]: emailTransport,
      ...(options.emailProviders ? { [ENV.emailProviders]: options.emailProviders.join(',') } : {}),
      [ENV.smsTransport]: options.smsTransport ?? 'simulator',
      [ENV.restBaseUrl]: simulator.url,
      [ENV.leaseSeconds]: String(LOCAL_TIMING.leaseSeconds),
      [ENV.maxReceiveCount]: String(INTAKE_QUEUE.maxReceiveCount),
      [ENV.parkGraceSeconds]: String(LOCAL_TIMING.visibilityTimeoutSeconds),
      [ENV.endpointDynamoDb]: dynamo.endpoint,
      [ENV.endpointSqs]: awsLocal,
      [ENV.endpointS3]: awsLocal,
      [ENV.endpointSes]: sesEndpoint,
      ...(sesEmitterPort
        ? { [ENV.localSesEmitterPort]: String(sesEmitterPort), [ENV.localSesUpstream]: sesUrl }
        : {}),
      // Throw-away signing keys for this run only (never written to disk): the endpoint verifies with them.
      [ENV.webhookSecrets]: JSON.stringify(generateSigningKeys().secrets),
      [ENV.localWebhookPort]: String(webhookPort),
      [ENV.localEventsDir]: eventsDir,
      ...(options.eventEndpoints?.length
        ? { [ENV.localEventEndpoints]: JSON.stringify(options.eventEndpoints) }
        : {}),
      POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      AWS_EC2_METADATA_DISABLED: 'true',
      ...options.env,
    };

    progress('starting the functions worker (dispatcher, archiver, reconciler)…');
    const functionsLog = join(logDir, 'functions.log');
    const logFd = openSync(functionsLog, 'a');
    const worker = spawn(process.execPath, COMPILED ? [WORKER_ENTRY] : ['--import', 'tsx', WORKER_ENTRY], {
      env: { ...process.env, ...env },
      stdio: ['ignore', logFd, logFd, 'ipc'],
    });
    closeSync(logFd);
    cleanups.push(() => stopChildProcess(worker, 5_000));
    await new Promise<void>((ready, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`functions worker did not start in 60 s; see ${functionsLog}`)),
        60_000,
      );
      worker.once('message', () => {
        clearTimeout(timer);
        ready();
      });
      worker.once('exit', (code) => {
        clearTimeout(timer);
        fail(new Error(`functions worker exited with code ${code} during start-up; see ${functionsLog}`));
      });
    });

    const state: LocalState = {
      dynamodb: dynamo.endpoint,
      sqs: awsLocal,
      queueUrl: intake.queueUrl,
      dlqUrl: intake.dlqUrl,
      s3: awsLocal,
      bucket,
      archiveFailuresUrl: archiveFailures.QueueUrl!,
      ses: sesEndpoint,
      simulator: simulator.url,
      archiveDir,
      webhook: `http://127.0.0.1:${webhookPort}`,
      eventsLog: join(eventsDir, 'outcomes.jsonl'),
      region,
      ledgerTable,
      suppressionTable,
      attachmentsBucket,
      emailTransport,
      ...(options.emailProviders ? { emailProviders: options.emailProviders } : {}),
      smsTransport: 'simulator',
      functionsLog,
      pids: { dynamodb: dynamo.pid, functions: worker.pid!, stack: process.pid },
      startedAt: new Date().toISOString(),
    };
    const statePath = stateFilePath(stateDir);
    writeFileSync(statePath, `${JSON.stringify(state, null, 2)}\n`);
    cleanups.unshift(async () => rmSync(statePath, { force: true }));
    return { state, env, simulator, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
};
