import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { sendResolved } from '../../../lib/aws/resolvedCommands.js';

interface Sent {
  target: string;
  body: string;
}

/**
 * A document client whose HTTP handler answers locally (no server): every request runs the client's
 * whole middleware stack (marshalling, serialisation, signing, deserialisation, unmarshalling) and is
 * recorded as it would go on the wire. `answer` is the JSON body DynamoDB would return.
 */
const offlineClient = (answer: (target: string) => { status: number; body: unknown }) => {
  const sent: Sent[] = [];
  const raw = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
    requestHandler: {
      handle: async (request: { headers: Record<string, string>; body?: string | Uint8Array }) => {
        const target = request.headers['x-amz-target'] ?? '';
        const text =
          request.body instanceof Uint8Array ? new TextDecoder().decode(request.body) : request.body;
        sent.push({ target, body: String(text) });
        const { status, body } = answer(target);
        return {
          response: {
            statusCode: status,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: new TextEncoder().encode(JSON.stringify(body)),
          },
        };
      },
    },
  });
  const doc = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  return { doc, sent };
};

const ok = () => ({ status: 200, body: {} });

const put = (pk: string) => ({
  TableName: 'ledger',
  Item: { pk, version: 1, history: [{ s: 'dispatching', at: 1 }], gone: undefined },
  ConditionExpression: 'attribute_not_exists(#pk)',
  ExpressionAttributeNames: { '#pk': 'pk' },
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  ReturnConsumedCapacity: 'TOTAL' as const,
});

describe('sendResolved (a middleware handler resolved once per client and command class)', () => {
  it('resolves the middleware once per command class, not once per request', async () => {
    // Prepare: every resolution (ours or client.send's) concatenates the client's stack once.
    const { doc } = offlineClient(ok);
    const concat = vi.spyOn(doc.middlewareStack, 'concat');

    // Act
    for (let i = 0; i < 5; i++) await sendResolved(doc, PutCommand, put(`row-${i}`));
    for (let i = 0; i < 5; i++)
      await sendResolved(doc, UpdateCommand, {
        TableName: 'ledger',
        Key: { pk: `row-${i}` },
        UpdateExpression: 'SET #v = :v',
        ExpressionAttributeNames: { '#v': 'version' },
        ExpressionAttributeValues: { ':v': 2 },
      });

    // Assess: one for PutCommand, one for UpdateCommand.
    expect(concat).toHaveBeenCalledTimes(2);
  });

  it("sends each request's own input, exactly as client.send would, and unmarshalls the answer the same", async () => {
    // Prepare: an UpdateItem answer with ALL_NEW attributes in DynamoDB's JSON.
    const answer = () => ({
      status: 200,
      body: {
        Attributes: { pk: { S: 'row-1' }, version: { N: '2' } },
        ConsumedCapacity: { CapacityUnits: 1 },
      },
    });
    const cached = offlineClient(answer);
    const plain = offlineClient(answer);
    const update = (pk: string, version: number) => ({
      TableName: 'ledger',
      Key: { pk },
      UpdateExpression: 'SET #v = :v, #h = list_append(#h, :e)',
      ConditionExpression: '#v = :expected',
      ExpressionAttributeNames: { '#v': 'version', '#h': 'history' },
      ExpressionAttributeValues: {
        ':v': version,
        ':expected': version - 1,
        ':e': [{ s: 'accepted', at: 2 }],
      },
      ReturnValues: 'ALL_NEW' as const,
      ReturnConsumedCapacity: 'TOTAL' as const,
    });

    // Act
    const outputs = [];
    for (const [pk, version] of [
      ['row-1', 2],
      ['row-2', 5],
      ['row-3', 9],
    ] as const) {
      outputs.push(await sendResolved(cached.doc, UpdateCommand, update(pk, version)));
      await plain.doc.send(new UpdateCommand(update(pk, version)));
    }
    await sendResolved(cached.doc, PutCommand, put('row-9'));
    await plain.doc.send(new PutCommand(put('row-9')));

    // Assess: the same requests on the wire, in order (the second is not the first's input again).
    expect(cached.sent).toEqual(plain.sent);
    const keyOf = (s: Sent) => {
      const body = JSON.parse(s.body);
      return `${s.target.split('.')[1]} ${(body.Key ?? body.Item).pk.S}`;
    };
    expect(cached.sent.map(keyOf)).toEqual([
      'UpdateItem row-1',
      'UpdateItem row-2',
      'UpdateItem row-3',
      'PutItem row-9',
    ]);
    expect(outputs[2]).toMatchObject({ Attributes: { pk: 'row-1', version: 2 } });
  });

  it('gives a different client its own handler, which sends through that client', async () => {
    // Prepare
    const a = offlineClient(ok);
    const b = offlineClient(ok);
    const concatB = vi.spyOn(b.doc.middlewareStack, 'concat');

    // Act
    await sendResolved(a.doc, PutCommand, put('on-a'));
    await sendResolved(b.doc, PutCommand, put('on-b'));
    await sendResolved(b.doc, PutCommand, put('on-b-again'));

    // Assess
    expect(a.sent.map((s) => JSON.parse(s.body).Item.pk.S)).toEqual(['on-a']);
    expect(b.sent.map((s) => JSON.parse(s.body).Item.pk.S)).toEqual(['on-b', 'on-b-again']);
    expect(concatB).toHaveBeenCalledTimes(1);
  });

  it('runs middleware added to the client after the handler was resolved (a meter attached later)', async () => {
    // Prepare
    const { doc } = offlineClient(ok);
    await sendResolved(doc, PutCommand, put('before'));
    const seen: string[] = [];
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        seen.push(`${context.commandName}:${(args.input as { Item: { pk: string } }).Item.pk}`);
        return next(args);
      },
      { step: 'initialize', name: 'lateMeter' },
    );

    // Act
    await sendResolved(doc, PutCommand, put('after'));
    doc.middlewareStack.remove('lateMeter');
    await sendResolved(doc, PutCommand, put('removed'));

    // Assess: the meter saw the unmarshalled input of the request sent after it was added, only that one.
    expect(seen).toEqual(['PutItemCommand:after']);
  });

  it('surfaces a refused condition as client.send does: the typed error with the old item', async () => {
    // Prepare
    const refuse = () => ({
      status: 400,
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
        message: 'The conditional request failed',
        Item: { pk: { S: 'taken' }, state: { S: 'accepted' } },
      },
    });
    const { doc } = offlineClient(refuse);

    // Act
    const error = await sendResolved(doc, PutCommand, put('taken')).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    expect((error as ConditionalCheckFailedException).Item).toEqual({
      pk: { S: 'taken' },
      state: { S: 'accepted' },
    });
  });
});
