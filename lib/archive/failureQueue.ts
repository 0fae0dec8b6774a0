import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { parseOrThrow } from '../domain/parseOrThrow.js';
import type { FailedBatchInfo } from './LocalStreamPoller.js';

/**
 * The archiver's failure queue: the on-failure records of stream batches it gave up on, and the drain that
 * hands each to a backfill (lib/archive/backfill.ts). Apart from the backfill, which reads the ledger, so
 * archive maintenance loads the DynamoDB client only when the queue holds a batch to backfill.
 */
export const FailedBatchSchema = z.object({
  shardId: z.string().check(z.minLength(1)),
  startSequenceNumber: z.string().check(z.regex(/^\d{1,40}$/)),
  endSequenceNumber: z.string().check(z.regex(/^\d{1,40}$/)),
  approximateArrivalOfFirstRecord: z.iso.datetime({ offset: true }),
  approximateArrivalOfLastRecord: z.iso.datetime({ offset: true }),
  batchSize: z.number().check(z.int(), z.minimum(0)),
  streamArn: z.string().check(z.minLength(1)),
});

/** Lambda's on-failure record for a stream batch: the coordinates sit in `DDBStreamBatchInfo`. */
export const parseFailureMessage = (body: string): FailedBatchInfo => {
  const value = JSON.parse(body) as { DDBStreamBatchInfo?: unknown };
  return parseOrThrow(FailedBatchSchema, value.DDBStreamBatchInfo ?? value);
};

/** The message the local poller's failure destination sends: the same shape Lambda sends. */
export const failureMessageOf = (batch: FailedBatchInfo, now = Date.now()) =>
  JSON.stringify({
    requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 0 },
    timestamp: new Date(now).toISOString(),
    version: '1.0',
    DDBStreamBatchInfo: batch,
  });

export interface DrainResult {
  batches: number;
  transitions: number;
  objects: string[];
  /** Messages that could not be backfilled; they stay on the queue (and its alarm stays on). */
  failed: number;
  errors: string[];
}

/**
 * Backfills every batch waiting on the failure queue. A message is deleted only after its backfill is
 * written, so the queue depth (alarmed) is exactly what still waits.
 */
export const drainFailures = async (options: {
  sqs: SQSClient;
  queueUrl: string;
  maxMessages?: number;
  /** Archives one failed batch; lib/archive/backfill.ts's `backfillBatch` over the ledger. */
  backfill: (batch: FailedBatchInfo) => Promise<{ transitions: number; objects: string[] }>;
}): Promise<DrainResult> => {
  const result: DrainResult = { batches: 0, transitions: 0, objects: [], failed: 0, errors: [] };
  const limit = options.maxMessages ?? 1000;
  while (result.batches + result.failed < limit) {
    const out = await options.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: options.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) break;
    for (const message of messages) {
      try {
        const done = await options.backfill(parseFailureMessage(message.Body ?? ''));
        await options.sqs.send(
          new DeleteMessageCommand({ QueueUrl: options.queueUrl, ReceiptHandle: message.ReceiptHandle! }),
        );
        result.batches += 1;
        result.transitions += done.transitions;
        result.objects.push(...done.objects);
      } catch (error) {
        // Kept on the queue: it becomes visible again and the next run retries it.
        result.failed += 1;
        result.errors.push(`${message.MessageId}: ${error instanceof Error ? error.name : 'unknown'}`);
      }
    }
    if (result.failed > 0) break;
  }
  return result;
};
