import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type {
  APIGatewayProxyEventV2WithJWTAuthorizer,
  APIGatewayProxyResultV2,
  APIGatewayProxyStructuredResultV2,
  Context,
  DynamoDBBatchResponse,
  DynamoDBStreamEvent,
  LambdaFunctionURLEvent,
  SQSEvent,
} from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsRecord } from '../../../harness/sqsEvents.js';
import { sqsClient } from '../../../lib/aws/clients.js';
import { s3Client } from '../../../lib/aws/storageClients.js';
import { ENV } from '../../../lib/config.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../../lib/ledger/DynamoOperatorQueries.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { localLambdaContext } from '../../../lib/local/lambdaContext.js';
import { type RunningFauxqs, startFauxqs } from '../../../lib/local/queues.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import {
  generateSigningKeys,
  type SignedRequest,
  signResend,
  signTwilio,
} from '../../../lib/simulator/webhookSigners.js';
import { loadCorpus } from '../../contract/providers/corpus.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { labelOf, sesTags } from '../../support/evidenceLabels.js';
import { MARKERS, receiptIntent, resetIntent } from '../../support/fixtures.js';
import { streamPoller } from '../../support/outcomeStream.js';

// The Lambda entry modules themselves, imported with the environment the CDK constructs set, against
// real servers: DynamoDB Local (global setup) and the provider simulator (a test double) over HTTP.
/** The deployment secret the functions read (SENDPROOF_CONTENT_HASH_KEY): labels are sealed under it. */
const ENTRIES_CONTENT_KEY = 'entries-test-content-hash-key-000';
let sim: RunningProviderSimulator;
let ledger: DynamoLedger;
let queries: DynamoOperatorQueries;
type Handler<E, R> = (event: E, context: Context) => Promise<R>;
let dispatch: Handler<SQSEvent, { batchItemFailures: Array<{ itemIdentifier: string }> }>;
let reconcile: Handler<{ cursor?: string }, { processed: number; resolved: number; hasMore: boolean }>;
let evidence: Handler<unknown, { results?: string[]; batchItemFailures?: Array<{ itemIdentifier: string }> }>;
let webhook: Handler<LambdaFunctionURLEvent, APIGatewayProxyResultV2>;
let consoleApi: (
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
) => Promise<APIGatewayProxyStructuredResultV2>;
let sqs: SQSClient;
let queueUrl: string;
let sqsEndpoint: string;
let ledgerTable: string;
const signingKeys = generateSigningKeys();

const sqsEvent = (messageId: string, body: string): SQSEvent => sqsBatch([[messageId, body]]);

const sqsBatch = (messages: Array<[string, string]>): SQSEvent => ({
  Records: messages.map(([messageId, body]) => sqsRecord({ messageId, body, receiptHandle: messageId })),
});

let queues: RunningFauxqs;
beforeAll(async () => {
  sim = await startProviderSimulator();
  // The intake queue (fauxqs on 127.0.0.1): the dispatcher moves visibility on it, the sweep publishes to it.
  queues = await startFauxqs();
  sqsEndpoint = queues.endpoint;
  sqs = sqsClient({ region: 'us-east-1', endpoint: sqsEndpoint });
  const queue = await sqs.send(new CreateQueueCommand({ QueueName: 'entries-intake' }));
  queueUrl = queue.QueueUrl!;
  const { raw, doc, endpoint } = localDynamo();
  const table = await createLedgerTable(raw, 'entries');
  ledgerTable = table;
  ledger = new DynamoLedger(doc, table);
  queries = new DynamoOperatorQueries(doc, table);
  Object.assign(process.env, {
    [ENV.ledgerTable]: table,
    [ENV.suppressionTable]: await createSuppressionTable(raw),
    [ENV.endpointDynamoDb]: endpoint,
    [ENV.endpointSqs]: sqsEndpoint,
    [ENV.queueUrl]: queue.QueueUrl!,
    [ENV.emailTransport]: 'simulator',
    [ENV.smsTransport]: 'simulator',
    [ENV.restBaseUrl]: sim.url,
    [ENV.contentHashKey]: ENTRIES_CONTENT_KEY,
    // The sweep looks at a parked notification 1 s after it is due, and again 1 s after a resume.
    [ENV.parkGraceSeconds]: '1',
    [ENV.webhookSecrets]: JSON.stringify(signingKeys.secrets),
    POWERTOOLS_SERVICE_NAME: 'sendproof',
    POWERTOOLS_METRICS_NAMESPACE: 'Sendproof',
  });
  ({ handler: dispatch } = (await import('../../../functions/dispatch/index.js')) as never);
  ({ handler: reconcile } = (await import('../../../functions/reconcile/index.js')) as never);
  ({ handler: evidence } = (await import('../../../functions/evidence/index.js')) as never);
  ({ handler: webhook } = (await import('../../../functions/webhook/index.js')) as never);
  ({ handler: consoleApi } = (await import('../../../functions/console/index.js')) as never);
});
afterAll(async () => {
  await sim.stop();
  await queues.stop();
});

const unknownRow = async (eventId: string) => {
  sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop' });
  const response = await dispatch(
    sqsEvent(`m-${eventId}`, JSON.stringify(resetIntent({ eventId }))),
    localLambdaContext('dispatch'),
  );
  const [row] = await queries.findByEvent(eventId);
  return { response, row: row! };
};

describe('Lambda entry points', () => {
  it('dispatch: an SQS batch is claimed, sent and acknowledged; a lost answer is reported for redelivery', async () => {
    // Act
    const ok = await dispatch(
      sqsEvent('m-ok', JSON.stringify(resetIntent({ eventId: 'entry-ok' }))),
      localLambdaContext('dispatch'),
    );
    const lost = await unknownRow('entry-lost');
    // Assess
    expect(ok.batchItemFailures).toEqual([]);
    expect((await queries.findByEvent('entry-ok'))[0]?.state).toBe('accepted');
    expect(lost.row.state).toBe('unknown');
    expect(lost.response.batchItemFailures).toEqual([{ itemIdentifier: 'm-entry-lost' }]);
  });

  it('reconcile: one invocation settles an unknown row (the REST feed is pulled first) and reports the Step Functions contract', async () => {
    // Prepare
    const { row } = await unknownRow('entry-reconcile');
    // Act
    const page = await reconcile({}, localLambdaContext('reconcile'));
    // Assess
    expect(page).toMatchObject({ hasMore: false });
    const after = await ledger.get(row.pk);
    expect(after).toMatchObject({ state: 'accepted', providerMessageId: sim.messages().at(-1)?.id });
    // The simulator's GET /v1/events said `sent` before the page's lookup could run.
    expect(after?.history.at(-1)).toMatchObject({ s: 'accepted', by: 'evidence:rest', why: 'rest:sent' });
  });

  it('evidence: one SQS batch from the evidence queue — an SES event as EventBridge delivers it, the same event again, an SES event as SNS delivers it — settles each row once and fails no record', async () => {
    // Prepare: two rows whose answers were lost; SES's events for them reach the queue two ways
    const { row } = await unknownRow('entry-evidence');
    const { row: other } = await unknownRow('entry-evidence-sns');
    const sesDetail = (key: DeliveryRecord, messageId: string) => ({
      eventType: 'Delivery',
      mail: { timestamp: new Date().toISOString(), messageId, tags: sesTags(key, ENTRIES_CONTENT_KEY) },
    });
    const eventBridge = JSON.stringify({
      version: '0',
      id: 'eb-1',
      'detail-type': 'Email Delivered',
      source: 'aws.ses',
      detail: sesDetail(row, 'ses-entry-1'),
    });
    // An SNS → SQS subscription (not raw) delivers the notification envelope, the event as its Message.
    const sns = JSON.stringify({
      Type: 'Notification',
      MessageId: 'sns-1',
      TopicArn: 'arn:aws:sns:us-east-1:000000000000:sms-events',
      Message: JSON.stringify(sesDetail(other, 'ses-entry-2')),
      Timestamp: new Date().toISOString(),
    });
    // Act
    const response = await evidence(
      sqsBatch([
        ['q-1', eventBridge],
        ['q-2', eventBridge],
        ['q-3', sns],
        ['q-4', 'not json'],
      ]),
      localLambdaContext('evidence'),
    );
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    for (const key of [row.pk, other.pk]) {
      const after = await ledger.get(key);
      expect(after?.state).toBe('accepted');
      expect(after?.history.filter((h) => h.by.startsWith('evidence:'))).toHaveLength(1);
    }
  });

  it('evidence: a direct EventBridge invocation is still understood, one event at a time', async () => {
    // Prepare
    const { row } = await unknownRow('entry-evidence-direct');
    const event = {
      version: '0',
      id: 'eb-2',
      'detail-type': 'Email Delivered',
      source: 'aws.ses',
      detail: {
        eventType: 'Delivery',
        mail: {
          timestamp: new Date().toISOString(),
          messageId: 'ses-entry-3',
          tags: sesTags(row, ENTRIES_CONTENT_KEY),
        },
      },
    };
    // Act
    const first = await evidence(event, localLambdaContext('evidence'));
    const second = await evidence(event, localLambdaContext('evidence'));
    // Assess
    expect(first.results).toEqual(['recorded']);
    expect(second.results).toEqual(['duplicate']);
  });

  it('reconcile: the sweep resumes a scheduled notification when it is due and, once sent, releases its seal', async () => {
    // Prepare: a receipt scheduled 1.5 s ahead is parked under a seal; its queue message is acknowledged.
    const sendAt = Date.now() + 1_500;
    const parked = await dispatch(
      sqsEvent(
        'm-sealed',
        JSON.stringify(receiptIntent({ eventId: 'entry-sealed', sendAt: new Date(sendAt).toISOString() })),
      ),
      localLambdaContext('dispatch'),
    );
    const [row] = await queries.findByEvent('entry-sealed');
    expect(parked.batchItemFailures).toEqual([]);
    expect(row?.state).toBe('scheduled');
    expect(await ledger.getSeal(row!.logicalKey)).toBeDefined();
    // Act: when due, a run's sweep publishes the resume notice; the dispatcher sends it; a run after the
    // recheck finds every row of the seal terminal and releases the seal.
    await new Promise((r) => setTimeout(r, Math.max(0, sendAt - Date.now()) + 200));
    await reconcile({}, localLambdaContext('reconcile'));
    // Other tests' notifications were parked too: take this one's notice from the queue.
    const notice = await noticeFor(row!.logicalKey);
    const resumed = await dispatch(sqsEvent('m-resume', notice!.Body!), localLambdaContext('dispatch'));
    await new Promise((r) => setTimeout(r, 1_200));
    await reconcile({}, localLambdaContext('reconcile'));
    // Assess
    expect(resumed.batchItemFailures).toEqual([]);
    expect((await ledger.get(row!.pk))?.state).toBe('accepted');
    expect(await ledger.getSeal(row!.logicalKey)).toBeUndefined();
  });

  it('webhook: a signed Resend event is verified and recorded; the same body unsigned is refused with 401', async () => {
    // Prepare
    const { row } = await unknownRow('entry-webhook');
    const signed = signResend(signingKeys, {
      type: 'email.delivered',
      created_at: new Date().toISOString(),
      data: {
        email_id: 'resend-entry-1',
        to: [MARKERS.email],
        tags: [{ name: 'sendproof-key', value: labelOf(row, ENTRIES_CONTENT_KEY) }],
      },
    });
    // Act
    const accepted = (await webhook(functionUrlEvent('/resend', signed), localLambdaContext('webhook'))) as {
      statusCode: number;
    };
    const refused = (await webhook(
      functionUrlEvent('/resend', { headers: { 'content-type': 'application/json' }, body: signed.body }),
      localLambdaContext('webhook'),
    )) as { statusCode: number };
    // Assess
    expect(accepted.statusCode).toBe(200);
    expect(refused.statusCode).toBe(401);
  });

  it('evidence and webhook: a documented STOP reply suppresses the number (provider_opt_out), the next SMS to it stops at the gate, and START lifts it (issue 29)', async () => {
    // Prepare: the providers' documented inbound payloads (test/contract/providers/)
    const payloadOf = (id: string) =>
      loadCorpus().find((c) => c.id === id)!.payload as Record<string, string>;
    const stop = payloadOf('sms-v2/inbound-stop');
    const snsEvent = {
      Records: [{ EventSource: 'aws:sns', Sns: { MessageId: 'sns-stop-1', Message: JSON.stringify(stop) } }],
    };
    const twilioUrl = 'https://entries.lambda-url.us-east-1.on.aws/twilio';
    const twilioStop = payloadOf('twilio/inbound-opt-out-type-stop');
    const twilioStart = payloadOf('twilio/inbound-opt-out-type-start');
    const before = sim.requests().length;

    // Act
    const stopped = await evidence(snsEvent, localLambdaContext('evidence'));
    const afterStop = await dispatch(
      sqsEvent(
        'm-opted-out',
        JSON.stringify(
          resetIntent({
            eventId: 'entry-opted-out',
            channels: ['sms'],
            recipient: { ref: 'texter-1', phone: stop.originationNumber! },
          }),
        ),
      ),
      localLambdaContext('dispatch'),
    );
    const twilioStopped = await webhook(
      functionUrlEvent('/twilio', signTwilio(signingKeys, twilioUrl, twilioStop)),
      localLambdaContext('webhook'),
    );
    const started = await webhook(
      functionUrlEvent('/twilio', signTwilio(signingKeys, twilioUrl, twilioStart)),
      localLambdaContext('webhook'),
    );

    // Assess
    expect(stopped.results).toEqual(['signal:opted_out']);
    expect((await queries.findByEvent('entry-opted-out'))[0]?.state).toBe('suppressed');
    expect(afterStop.batchItemFailures).toEqual([]);
    expect(sim.requests().length).toBe(before);
    expect(JSON.parse(String((twilioStopped as { body: string }).body))).toEqual({
      results: ['signal:opted_out'],
    });
    expect(JSON.parse(String((started as { body: string }).body))).toEqual({ results: ['signal:opted_in'] });
  });

  it('console: the API answers a viewer the gateway verified (JWT claims) with the ledger overview', async () => {
    // Act
    const response = await consoleApi(
      consoleEvent('GET', '/api/overview', { sub: 'viewer-1', 'cognito:groups': '[viewer]' }),
    );
    const anonymous = await consoleApi(consoleEvent('GET', '/api/overview'));
    // Assess
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(String(response.body))).toBeTypeOf('object');
    expect(anonymous.statusCode).toBe(401);
  });

  it('outcomes: the ledger stream becomes outcome events on the configured bus (PutEvents over HTTP)', async () => {
    // Prepare: an HTTP-level fake of EventBridge's JSON 1.1 API on loopback (no emulator exists), driven
    // by the real @aws-sdk/client-eventbridge; it accepts every entry, as PutEvents documents
    // (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html).
    const bus = await jsonFake('AWSEvents.', (target, body) =>
      target === 'PutEvents'
        ? {
            FailedEntryCount: 0,
            Entries: (body.Entries as unknown[]).map((_, i) => ({ EventId: `eb-${i}` })),
          }
        : undefined,
    );
    try {
      Object.assign(process.env, {
        [ENV.eventBusName]: 'entries-outcomes',
        [ENV.endpointEventBridge]: bus.endpoint,
      });
      const { handler: outcomes } = (await import('../../../functions/outcomes/index.js')) as unknown as {
        handler: (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>;
      };
      const poller = await streamPoller(ledgerTable, (event) =>
        outcomes(event, localLambdaContext('outcomes')),
      );
      // Act: the table's stream so far (the tests above), as the Lambda event source would hand it over.
      while ((await poller.pollOnce()) > 0);
      await poller.flush();
      // Assess
      const entries = bus.calls.flatMap((c) => c.body.Entries as Array<Record<string, string>>);
      expect(entries.length).toBeGreaterThan(0);
      expect(new Set(entries.map((e) => e.EventBusName))).toEqual(new Set(['entries-outcomes']));
      const details = entries.map((e) => JSON.parse(e.Detail!) as { eventId: string; state: string });
      expect(details).toContainEqual(expect.objectContaining({ eventId: 'entry-ok', state: 'accepted' }));
    } finally {
      await bus.stop();
    }
  });

  it('slo-audit: lists the archive’s tenants in S3 and counts each purpose’s duplicates from Athena', async () => {
    // Prepare: the archive bucket on fauxqs with one tenant partition, and an HTTP-level fake of Athena's
    // JSON 1.1 API whose result set (header row first, as GetQueryResults documents) has one channel row
    // with one message accepted twice.
    const s3 = s3Client({ region: 'us-east-1', endpoint: sqsEndpoint });
    await s3.send(new CreateBucketCommand({ Bucket: 'entries-archive' }));
    await s3.send(
      new PutObjectCommand({
        Bucket: 'entries-archive',
        Key: 'transitions/tenant=acme/dt=2026-12-01/batch-1.json.gz',
        Body: 'x',
      }),
    );
    const header = ['channel', 'accepted_messages', 'duplicate_messages'];
    const athena = await jsonFake('AmazonAthena.', (target) => {
      if (target === 'StartQueryExecution') return { QueryExecutionId: 'qe-1' };
      if (target === 'GetQueryExecution')
        return { QueryExecution: { QueryExecutionId: 'qe-1', Status: { State: 'SUCCEEDED' } } };
      if (target === 'GetQueryResults')
        return {
          ResultSet: {
            Rows: [header, ['email', '4', '1']].map((cells) => ({
              Data: cells.map((c) => ({ VarCharValue: c })),
            })),
            ResultSetMetadata: {
              ColumnInfo: header.map((name) => ({ Name: name, Label: name, Type: 'varchar' })),
            },
          },
        };
      return undefined;
    });
    try {
      Object.assign(process.env, {
        [ENV.archiveBucket]: 'entries-archive',
        [ENV.endpointS3]: sqsEndpoint,
        [ENV.athenaWorkGroup]: 'entries-audit',
        [ENV.athenaDatabase]: 'entries_archive',
        [ENV.endpointAthena]: athena.endpoint,
      });
      const { handler: sloAudit } = (await import('../../../functions/slo-audit/index.js')) as unknown as {
        handler: () => Promise<{ duplicates: number }>;
      };
      // Act
      const result = await sloAudit();
      // Assess: one query per purpose for the one tenant, each in the workgroup with the tenant as a
      // literal, and each purpose's one duplicate counted once.
      const starts = athena.calls.filter((c) => c.target === 'StartQueryExecution');
      expect(starts.length).toBeGreaterThan(0);
      for (const start of starts) {
        expect(start.body.WorkGroup).toBe('entries-audit');
        expect(String(start.body.QueryString)).toContain("'acme'");
      }
      expect(result.duplicates).toBe(starts.length);
    } finally {
      await athena.stop();
    }
  });
});

/** An HTTP-level fake of an AWS JSON 1.1 API on loopback: `answer` gives the body for a target, or 400. */
const jsonFake = async (
  prefix: string,
  answer: (target: string, body: Record<string, unknown>) => unknown,
) => {
  const calls: Array<{ target: string; body: Record<string, unknown> }> = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '').replace(prefix, '');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      calls.push({ target, body });
      const value = answer(target, body);
      response
        .writeHead(value === undefined ? 400 : 200, { 'content-type': 'application/x-amz-json-1.1' })
        .end(JSON.stringify(value ?? { __type: 'InvalidRequestException', Message: `unexpected ${target}` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
};

/** Receives from the intake queue until the resume notice naming `logicalKey` arrives. */
const noticeFor = async (logicalKey: string) => {
  for (let round = 0; round < 10; round++) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1, MaxNumberOfMessages: 10 }),
    );
    const notice = Messages.find((m) => m.Body?.includes(JSON.stringify(logicalKey)));
    if (notice) return notice;
  }
  return undefined;
};

/** A Lambda Function URL request as the webhook function receives it. */
const functionUrlEvent = (path: string, request: SignedRequest): LambdaFunctionURLEvent =>
  ({
    version: '2.0',
    rawPath: path,
    rawQueryString: '',
    headers: { host: 'entries.lambda-url.us-east-1.on.aws', ...request.headers },
    body: request.body,
    isBase64Encoded: false,
    requestContext: { domainName: 'entries.lambda-url.us-east-1.on.aws', http: { method: 'POST' } },
  }) as unknown as LambdaFunctionURLEvent;

/** An HTTP API (JWT authorizer) request as the console function receives it: claims already verified. */
const consoleEvent = (
  method: string,
  path: string,
  claims?: Record<string, string>,
): APIGatewayProxyEventV2WithJWTAuthorizer =>
  ({
    version: '2.0',
    rawPath: path,
    rawQueryString: '',
    headers: {},
    isBase64Encoded: false,
    requestContext: {
      http: { method, path, sourceIp: '127.0.0.1' },
      ...(claims ? { authorizer: { jwt: { claims, scopes: [] } } } : {}),
    },
  }) as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
