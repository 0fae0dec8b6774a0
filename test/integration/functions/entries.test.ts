import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { buildApp } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '../../../lib/aws/clients.js';
import { ENV } from '../../../lib/config.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../../lib/ledger/DynamoOperatorQueries.js';
import { localLambdaContext } from '../../../lib/local/lambdaContext.js';
import { freePort } from '../../../lib/local/ports.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { sesTags } from '../../support/evidenceLabels.js';
import { resetIntent } from '../../support/fixtures.js';

// The Lambda entry modules themselves, imported with the environment the CDK constructs set, against
// real servers: DynamoDB Local (global setup) and the provider simulator (a test double) over HTTP.
let sim: RunningProviderSimulator;
let ledger: DynamoLedger;
let queries: DynamoOperatorQueries;
type Handler<E, R> = (event: E, context: Context) => Promise<R>;
let dispatch: Handler<SQSEvent, { batchItemFailures: Array<{ itemIdentifier: string }> }>;
let reconcile: Handler<{ cursor?: string }, { processed: number; resolved: number; hasMore: boolean }>;
let evidence: Handler<unknown, { results: string[] }>;

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
  const queue = await sqsClient({ region: 'us-east-1', endpoint: sqsEndpoint }).send(
    new CreateQueueCommand({ QueueName: 'entries-intake' }),
  );
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
    POWERTOOLS_SERVICE_NAME: 'sendproof',
    POWERTOOLS_METRICS_NAMESPACE: 'Sendproof',
  });
  ({ handler: dispatch } = (await import('../../../functions/dispatch/index.js')) as never);
  ({ handler: reconcile } = (await import('../../../functions/reconcile/index.js')) as never);
  ({ handler: evidence } = (await import('../../../functions/evidence/index.js')) as never);
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
});
