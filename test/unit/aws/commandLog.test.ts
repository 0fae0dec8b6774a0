import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  BatchGetCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { clientOptionsFor, dynamoDocumentClient, sqsClient } from '../../../lib/aws/clients.js';
import { captureAwsCommands } from '../../../lib/aws/commandLog.js';
import { loadConfig } from '../../../lib/config.js';

/** Answers every command locally (no server): the recorder runs before this, at the initialize step. */
const offline = <C extends DynamoDBDocumentClient | SQSClient>(client: C): C => {
  (client as DynamoDBDocumentClient).middlewareStack.add(
    () => async () => ({ output: { $metadata: {} }, response: {} }) as never,
    { step: 'finalizeRequest', name: 'answerOffline' },
  );
  return client;
};

const config = {
  ...loadConfig({ SENDPROOF_LEDGER_TABLE: 'ledger-t', SENDPROOF_SUPPRESSION_TABLE: 'suppression-t' }),
  functionName: 'reconcile' as const,
};

let stop: (() => void) | undefined;
afterEach(() => stop?.());

describe('the AWS command recorder', () => {
  it('records the operation a document command sends, by the setting that names each table, and the key shape', async () => {
    // Prepare
    const capture = captureAwsCommands();
    stop = capture.stop;
    const doc = offline(dynamoDocumentClient(clientOptionsFor(config, 'endpointDynamoDb')));
    // Act
    await doc.send(new DeleteCommand({ TableName: 'ledger-t', Key: { pk: 'seal#acme:receipt:e1' } }));
    await doc.send(
      new BatchGetCommand({
        RequestItems: {
          'suppression-t': { Keys: [{ pk: 'acme:u1' }] },
          'ledger-t': { Keys: [{ pk: 'flow#k' }] },
        },
      }),
    );
    await doc.send(
      new QueryCommand({
        TableName: 'ledger-t',
        IndexName: 'attention',
        KeyConditionExpression: 'attn = :a',
        ExpressionAttributeValues: { ':a': 'parked' },
      }),
    );
    // Assess: lib-dynamodb's DeleteCommand is the DeleteItem operation; the seal key shows only its prefix.
    expect(capture.records).toEqual([
      {
        function: 'reconcile',
        service: 'dynamodb',
        command: 'DeleteItem',
        resources: [{ kind: 'table', name: 'ledger-t', setting: 'ledgerTable', keyPrefix: 'seal#…' }],
      },
      {
        function: 'reconcile',
        service: 'dynamodb',
        command: 'BatchGetItem',
        resources: [
          { kind: 'table', name: 'suppression-t', setting: 'suppressionTable' },
          { kind: 'table', name: 'ledger-t', setting: 'ledgerTable' },
        ],
      },
      {
        function: 'reconcile',
        service: 'dynamodb',
        command: 'Query',
        resources: [{ kind: 'index', name: 'ledger-t', setting: 'ledgerTable', index: 'attention' }],
      },
    ]);
  });

  it('records an event source stand-in under the function it reads for, with what the command named', async () => {
    // Prepare
    const capture = captureAwsCommands();
    stop = capture.stop;
    const queueUrl = 'http://127.0.0.1:1/000000000000/intake';
    const sqs = offline(
      sqsClient({
        region: 'us-east-1',
        caller: { function: 'dispatch', via: 'event-source', settings: { queueUrl } },
      }),
    );
    // Act
    await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: [{ Id: '1', MessageBody: '{}' }] }),
    );
    // Assess
    expect(capture.records).toEqual([
      {
        function: 'dispatch',
        via: 'event-source',
        service: 'sqs',
        command: 'SendMessageBatch',
        resources: [{ kind: 'queue', name: queueUrl, setting: 'queueUrl' }],
      },
    ]);
  });

  it('adds nothing to a client built while recording is off, or built without a function', async () => {
    // Prepare: recording off (no capture, no SENDPROOF_AWS_COMMAND_LOG in the unit project)
    const off = dynamoDocumentClient(clientOptionsFor(config));
    const capture = captureAwsCommands();
    stop = capture.stop;
    const cli = offline(dynamoDocumentClient(clientOptionsFor(loadConfig({}))));
    // Act
    await cli.send(new DeleteCommand({ TableName: 'ledger-t', Key: { pk: 'x' } }));
    // Assess
    expect(off.middlewareStack.identify().some((m) => m.includes('sendproofCommandLog'))).toBe(false);
    expect(cli.middlewareStack.identify().some((m) => m.includes('sendproofCommandLog'))).toBe(false);
    expect(capture.records).toEqual([]);
  });
});
