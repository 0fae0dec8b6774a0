import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '../../../lib/aws/clients.js';
import { type RunningFauxqs, startFauxqs } from '../../../lib/local/queues.js';
import { publishIntents } from '../../../lib/publish/publishIntents.js';
import { receiptIntent, resetIntent } from '../../support/fixtures.js';

// Real SQS API: fauxqs on 127.0.0.1.
let app: RunningFauxqs;
let endpoint: string;
beforeAll(async () => {
  app = await startFauxqs();
  endpoint = app.endpoint;
});
afterAll(async () => {
  await app.stop();
});

describe('publishIntents', () => {
  it('validates first, sends the valid intents in batches of 10, and answers per intent', async () => {
    // Prepare: 23 intents, two of them invalid
    const sqs = sqsClient({ region: 'us-east-1', endpoint });
    const queue = await sqs.send(new CreateQueueCommand({ QueueName: 'publish-test' }));
    const batches: number[] = [];
    sqs.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { Entries?: unknown[] };
        if (input.Entries) batches.push(input.Entries.length);
        return next(args);
      },
      { step: 'initialize', name: 'countBatches' },
    );
    const intents: unknown[] = Array.from({ length: 23 }, (_, i) => receiptIntent({ eventId: `order-${i}` }));
    intents[4] = { ...receiptIntent({ eventId: 'bad-1' }), surprise: true };
    intents[17] = resetIntent({ eventId: 'bad-2', expiresAt: new Date(Date.now() - 1000).toISOString() });
    const progress: number[] = [];
    // Act
    const results = await publishIntents(sqs, queue.QueueUrl!, intents, {
      onProgress: (done) => progress.push(done),
    });
    // Assess
    expect(batches).toEqual([10, 10, 1]);
    expect(progress).toEqual([10, 20, 21]);
    expect(results).toHaveLength(23);
    expect(results.map((r) => r.index)).toEqual([...Array(23).keys()]);
    expect(results.filter((r) => r.ok)).toHaveLength(21);
    expect(results[4]).toMatchObject({ ok: false, stage: 'validation', issues: [{ field: '(root)' }] });
    expect(results[17]).toMatchObject({ ok: false, stage: 'validation', issues: [{ field: 'expiresAt' }] });
    expect(results[0]).toMatchObject({
      ok: true,
      dedupeKeys: ['acme-games:receipt:order-0:player-73:email:rev=v4'],
    });
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queue.QueueUrl!,
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    expect(Number(attributes.Attributes?.ApproximateNumberOfMessages)).toBe(21);
  });

  it('reports a queue-side failure on every intent of the failed batch instead of throwing', async () => {
    const sqs = sqsClient({ region: 'us-east-1', endpoint });
    const results = await publishIntents(sqs, `${endpoint}/000000000000/no-such-queue`, [receiptIntent()]);
    expect(results).toEqual([expect.objectContaining({ index: 0, ok: false, stage: 'queue' })]);
  });

  it('refuses at publish an intent its template revision cannot render, naming the missing variable', async () => {
    // Prepare: a receipt without `total`, which templates/receipt/v4 (the dispatcher's copy) declares
    const sqs = sqsClient({ region: 'us-east-1', endpoint });
    const queue = await sqs.send(new CreateQueueCommand({ QueueName: 'publish-template-check' }));
    const { total: _total, ...data } = receiptIntent().data as Record<string, unknown>;
    // Act
    const results = await publishIntents(sqs, queue.QueueUrl!, [receiptIntent({ data }), receiptIntent()]);
    // Assess: the first never reaches the queue; the second does
    expect(results[0]).toEqual({
      index: 0,
      ok: false,
      stage: 'validation',
      issues: [{ field: 'data.total', message: 'is a variable of template receipt/v4 and is missing' }],
    });
    expect(results[1]).toMatchObject({ ok: true });
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queue.QueueUrl!,
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    expect(Number(attributes.Attributes?.ApproximateNumberOfMessages)).toBe(1);
    // `templates: false` leaves the check to the dispatcher (an `invalid` row on arrival)
    const unchecked = await publishIntents(sqs, queue.QueueUrl!, [receiptIntent({ data })], {
      templates: false,
    });
    expect(unchecked[0]).toMatchObject({ ok: true });
  });
});
