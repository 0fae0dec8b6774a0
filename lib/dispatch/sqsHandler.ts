import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import pLimit from 'p-limit';
import { SendproofError } from '../domain/errors.js';
import type { Dispatcher } from './Dispatcher.js';

/** The message must come back from the queue: reported as a batch item failure, never lost. */
export class RetryLaterError extends SendproofError {
  constructor(messageId: string, detail: string) {
    super('retryable', 'retry_later', `message ${messageId} returns to the queue: ${detail}`);
  }
}

/**
 * SQS → dispatcher with partial batch responses (Powertools batch). Records run concurrently, at most
 * `concurrency` at a time. A record that must come back (or whose processing failed) is reported on its
 * own; the rest of the batch is acknowledged.
 */
export const createSqsHandler = (dispatcher: Dispatcher, options: { concurrency: number }) => {
  const limit = pLimit(options.concurrency);
  const recordHandler = (record: SQSRecord) =>
    limit(async () => {
      const outcome = await dispatcher.handle(record.body, {
        messageId: record.messageId,
        receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1),
      });
      if (outcome.disposition === 'retry_later') {
        const waiting = outcome.channels.map((c) => `${c.channel}:${c.state}`).join(',');
        throw new RetryLaterError(record.messageId, waiting);
      }
      return outcome;
    });
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> =>
    processPartialResponse(event, recordHandler, new BatchProcessor(EventType.SQS), {
      ...(context ? { context } : {}),
      // A batch whose every record must come back is still a normal answer, not a function error.
      throwOnFullBatchFailure: false,
    });
};
