import { CreateQueueCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type {
  APIGatewayProxyEventV2WithJWTAuthorizer,
  APIGatewayProxyResultV2,
  APIGatewayProxyStructuredResultV2,
  Context,
  LambdaFunctionURLEvent,
  SQSEvent,
} from 'aws-lambda';
import { buildApp } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '../../../lib/aws/clients.js';
import { ENV } from '../../../lib/config.js';
import { rowLabelOf } from '../../../lib/domain/keys.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../../lib/ledger/DynamoOperatorQueries.js';
import { localLambdaContext } from '../../../lib/local/lambdaContext.js';
import { freePort } from '../../../lib/local/ports.js';
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
import { sesTags } from '../../support/evidenceLabels.js';
import { MARKERS, receiptIntent, resetIntent } from '../../support/fixtures.js';

// The Lambda entry modules themselves, imported with the environment the CDK constructs set, against
// real servers: DynamoDB Local (global setup) and the provider simulator (a test double) over HTTP.
let sim: RunningProviderSimulator;
let ledger: DynamoLedger;
let queries: DynamoOperatorQueries;
type Handler<E, R> = (event: E, context: Context) => Promise<R>;
let dispatch: Handler<SQSEvent, { batchItemFailures: Array<{ itemIdentifier: string }> }>;
let reconcile: Handler<{ cursor?: string }, { processed: number; resolved: number; hasMore: boolean }>;
let evidence: Handler<unknown, { results: string[] }>;
let webhook: Handler<LambdaFunctionURLEvent, APIGatewayProxyResultV2>;
let consoleApi: (
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
) => Promise<APIGatewayProxyStructuredResultV2>;
let sqs: SQSClient;
let queueUrl: string;
const signingKeys = generateSigningKeys();

const sqsEvent = (messageId: string, body: string): SQSEvent => ({
  Records: [
    {
      messageId,
      receiptHandle: messageId,
      body,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(Date.now()),
        SenderId: 'test',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:intake',
      awsRegion: 'us-east-1',
    },
  ],
});

let queues: ReturnType<typeof buildApp>;
beforeAll(async () => {
  sim = await startProviderSimulator();
  // The intake queue (fauxqs on 127.0.0.1): the dispatcher moves visibility on it, the sweep publishes to it.
  queues = buildApp({ logger: false });
  const port = await freePort();
  await queues.listen({ port, host: '127.0.0.1' });
  const sqsEndpoint = `http://127.0.0.1:${port}`;
  sqs = sqsClient({ region: 'us-east-1', endpoint: sqsEndpoint });
  const queue = await sqs.send(new CreateQueueCommand({ QueueName: 'entries-intake' }));
  queueUrl = queue.QueueUrl!;
  const { raw, doc, endpoint } = localDynamo();
  const table = await createLedgerTable(raw, 'entries');
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
    [ENV.contentHashKey]: 'entries-test-content-hash-key-000',
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
  await queues.close();
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

  it('evidence: an SES Delivery event via EventBridge settles the row once, even when delivered twice', async () => {
    // Prepare
    const { row } = await unknownRow('entry-evidence');
    const event = {
      version: '0',
      id: 'eb-1',
      'detail-type': 'Email Delivered',
      source: 'aws.ses',
      detail: {
        eventType: 'Delivery',
        mail: {
          timestamp: new Date().toISOString(),
          messageId: 'ses-entry-1',
          tags: sesTags(row),
        },
      },
    };
    // Act
    const first = await evidence(event, localLambdaContext('evidence'));
    const second = await evidence(event, localLambdaContext('evidence'));
    // Assess
    expect(first.results).toEqual(['recorded']);
    expect(second.results).toEqual(['duplicate']);
    const after = await ledger.get(row.pk);
    expect(after?.state).toBe('accepted');
    expect(after?.history.filter((h) => h.by.startsWith('evidence:'))).toHaveLength(1);
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
        tags: [
          { name: 'sendproof-key', value: row.idempotencyKey },
          { name: 'sendproof-row', value: rowLabelOf(row.pk)! },
        ],
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
});

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
