import { CreateQueueCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '../../../lib/aws/clients.js';
import { type RunningFauxqs, startFauxqs } from '../../../lib/local/queues.js';
import { SqsPoller } from '../../../lib/local/SqsPoller.js';

// fauxqs on 127.0.0.1. The dispatcher's visibility cap counts a message's time in flight from its first
// receive (lib/dispatch/visibility.ts), so the local poller must pass SQS's ApproximateFirstReceiveTimestamp
// through as Lambda does, unchanged on a redelivery, never "now".
let fauxqs: RunningFauxqs;
let sqs: SQSClient;

beforeAll(async () => {
  fauxqs = await startFauxqs();
  sqs = sqsClient({ region: 'us-east-1', endpoint: fauxqs.endpoint });
});
afterAll(async () => {
  await fauxqs?.stop();
});

describe('the local SQS poller', () => {
  it('hands the handler the first-receive time SQS reports, the same on the redelivery', async () => {
    // Prepare: a queue that redelivers a failed record after 1 s
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: 'poller-first-receive', Attributes: { VisibilityTimeout: '1' } }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: '{}' }));
    const seen: Array<{ record: SQSRecord; at: number }> = [];
    const poller = new SqsPoller({
      sqs,
      queueUrl: QueueUrl!,
      region: 'us-east-1',
      functionName: 'poller-test',
      handler: async (event) => {
        for (const record of event.Records) seen.push({ record, at: Date.now() });
        // The first delivery fails, so the message comes back.
        return {
          batchItemFailures: seen.length === 1 ? [{ itemIdentifier: event.Records[0]!.messageId }] : [],
        };
      },
    });
    // pollOnce by hand (no start(): its loops would receive in the background)
    const first = await poller.pollOnce();
    await new Promise((r) => setTimeout(r, 1_300));
    const second = await poller.pollOnce();
    // Assess
    expect([first, second]).toEqual([1, 1]);
    const [a, b] = seen;
    expect(b!.record.attributes.ApproximateReceiveCount).toBe('2');
    expect(b!.record.attributes.ApproximateFirstReceiveTimestamp).toBe(
      a!.record.attributes.ApproximateFirstReceiveTimestamp,
    );
    expect(Number(b!.record.attributes.ApproximateFirstReceiveTimestamp)).toBeLessThanOrEqual(a!.at);
    expect(b!.at - Number(b!.record.attributes.ApproximateFirstReceiveTimestamp)).toBeGreaterThanOrEqual(
      1_000,
    );
  });
});
