import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { sqsRecord } from '../../../harness/sqsEvents.js';
import type { Dispatcher } from '../../../lib/dispatch/Dispatcher.js';
import { createSqsHandler } from '../../../lib/dispatch/sqsHandler.js';
import {
  MAX_VISIBILITY_SECONDS,
  VISIBILITY_CLOCK_SLACK_SECONDS,
  visibilityTimeoutFor,
} from '../../../lib/dispatch/visibility.js';

const HOUR_MS = 3_600_000;

/** A dispatcher that asks for the message to come back `visibleAfterMs` later (a parked retry). */
const waitingDispatcher = (visibleAfterMs: number) =>
  ({
    prefetch: async () => undefined,
    handle: async () => ({
      disposition: 'retry_later',
      visibleAfterMs,
      channels: [{ channel: 'email', state: 'retry_wait', action: 'retry_later', dedupeKey: 'k' }],
    }),
  }) as unknown as Dispatcher;

const record = (firstReceivedAgoMs: number, receiveCount = 1): SQSEvent => {
  const now = Date.now();
  return {
    Records: [
      sqsRecord({
        messageId: 'm-1',
        receiptHandle: 'rh-1',
        body: '{}',
        receiveCount,
        sentAt: now - firstReceivedAgoMs - 1_000,
        firstReceivedAt: now - firstReceivedAgoMs,
      }),
    ],
  };
};

const run = async (visibleAfterMs: number, firstReceivedAgoMs: number) => {
  const changes: number[] = [];
  const errors: unknown[] = [];
  const handle = createSqsHandler(waitingDispatcher(visibleAfterMs), {
    concurrency: 1,
    changeVisibility: async (_handle, seconds) => {
      changes.push(seconds);
    },
    onVisibilityError: (error) => errors.push(error),
  });
  const response = await handle(record(firstReceivedAgoMs));
  return { changes, errors, response };
};

// SQS: "You can continue to call ChangeMessageVisibility to extend the visibility timeout to a maximum of
// 12 hours. If you try to extend the visibility timeout beyond 12 hours, your request is rejected."
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html)
describe('the visibility a parked message asks SQS for counts the time it has already been in flight', () => {
  it('asks a message received 11 h ago for at most the hour SQS has left, not the 5 h it waits for', async () => {
    // Act
    const { changes, response } = await run(5 * HOUR_MS, 11 * HOUR_MS);
    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    expect(changes).toHaveLength(1);
    expect(changes[0]).toBeLessThanOrEqual(3_600 - VISIBILITY_CLOCK_SLACK_SECONDS);
    expect(changes[0]).toBeGreaterThan(3_600 - VISIBILITY_CLOCK_SLACK_SECONDS - 5);
  });

  it('asks for what the message waits for when that fits, and for the 12 h cap minus slack on a fresh one', async () => {
    // Act
    const short = await run(90_000, 2_000);
    const long = await run(30 * HOUR_MS, 0);
    // Assess
    expect(short.changes).toEqual([90]);
    expect(long.changes[0]).toBeLessThanOrEqual(MAX_VISIBILITY_SECONDS - VISIBILITY_CLOCK_SLACK_SECONDS);
    expect(long.changes[0]).toBeGreaterThan(MAX_VISIBILITY_SECONDS - VISIBILITY_CLOCK_SLACK_SECONDS - 5);
  });

  it('asks for nothing once the message has been in flight for (nearly) 12 h, and says so', async () => {
    // Act
    const { changes, errors, response } = await run(HOUR_MS, 12 * HOUR_MS - 30_000);
    // Assess: the message still comes back (after the queue's own timeout); no request SQS would refuse.
    expect(changes).toEqual([]);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    expect(String(errors[0])).toMatch(/in flight for nearly 12 hours/);
  });

  it('counts a redelivery from its first receive (the bound SQS never rejects)', () => {
    // Assess
    const now = Date.now();
    expect(
      visibilityTimeoutFor(6 * HOUR_MS, { ApproximateFirstReceiveTimestamp: String(now - 8 * HOUR_MS) }, now),
    ).toBe(4 * 3_600 - VISIBILITY_CLOCK_SLACK_SECONDS);
  });
});
