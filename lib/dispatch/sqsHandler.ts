import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import pLimit from 'p-limit';
import { SendproofError } from '../domain/errors.js';
import type { GateFacts } from '../ledger/port.js';
import type { Dispatcher, QueueEnvelope } from './Dispatcher.js';
import { VisibilityExhaustedError, visibilityTimeoutFor } from './visibility.js';

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
export interface SqsHandlerOptions {
  concurrency: number;
  /**
   * Moves a message's visibility so it comes back when the ledger says it is due (a Retry-After of
   * minutes must not burn receives). Absent: the queue's own visibility timeout applies.
   */
  changeVisibility?: (receiptHandle: string, seconds: number) => Promise<void>;
  /** Told when the batch's gate-facts read fails; each record then reads for itself. */
  onPrefetchError?: (error: unknown) => void;
  /** Told when a visibility change fails; the message then returns after the queue's own timeout. */
  onVisibilityError?: (error: unknown) => void;
}

export { MAX_VISIBILITY_SECONDS } from './visibility.js';

/** What the batch handler needs of a dispatcher; sealing at the batch's start is optional. */
export type BatchDispatcher = Pick<Dispatcher, 'handle' | 'prefetch'> &
  Partial<Pick<Dispatcher, 'sealLastReceives'>>;

const NOTHING_SEALED: ReadonlySet<string> = new Set();

export const createSqsHandler = (dispatcher: BatchDispatcher, options: SqsHandlerOptions) => {
  const limit = pLimit(options.concurrency);
  const envelopeOf = (record: SQSRecord, sealed?: ReadonlySet<string>): QueueEnvelope => ({
    messageId: record.messageId,
    receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1),
    ...(sealed?.has(record.messageId) ? { sealed: true } : {}),
    ...sentAtOf(record),
  });
  const recordHandler = (record: SQSRecord, facts: GateFacts | undefined, sealed: ReadonlySet<string>) =>
    limit(async () => {
      const outcome = await dispatcher.handle(record.body, envelopeOf(record, sealed), facts);
      if (outcome.disposition === 'retry_later') {
        if (options.changeVisibility && outcome.visibleAfterMs !== undefined) {
          // Within what SQS still allows this message (its time in flight counts toward 12 hours).
          const seconds = visibilityTimeoutFor(outcome.visibleAfterMs, record.attributes);
          // Best effort: a failure leaves the queue's timeout, and the sealed intent is the ledger's anyway.
          if (seconds === undefined)
            options.onVisibilityError?.(new VisibilityExhaustedError(record.messageId));
          else
            await options
              .changeVisibility(record.receiptHandle, seconds)
              .catch((error: unknown) => options.onVisibilityError?.(error));
        }
        const waiting = outcome.channels.map((c) => `${c.channel}:${c.state}`).join(',');
        throw new RetryLaterError(record.messageId, waiting);
      }
      return outcome;
    });
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    // One read for the batch's suppression entries and fallback flows. If it fails, each record reads
    // for itself (the gates never run on a guess).
    // Meanwhile every record on its last receive is sealed before any record runs: a batch that times
    // out before reaching one has still handed it to the ledger's sweep.
    const [facts, sealed] = await Promise.all([
      dispatcher.prefetch(event.Records.map((r) => r.body)).catch((error: unknown) => {
        options.onPrefetchError?.(error);
        return undefined;
      }),
      dispatcher.sealLastReceives?.(event.Records.map((r) => ({ body: r.body, envelope: envelopeOf(r) }))) ??
        NOTHING_SEALED,
    ]);
    return processPartialResponse(
      event,
      (record: SQSRecord) => recordHandler(record, facts, sealed),
      new BatchProcessor(EventType.SQS),
      {
        ...(context ? { context } : {}),
        // A batch whose every record must come back is still a normal answer, not a function error.
        throwOnFullBatchFailure: false,
      },
    );
  };
};

/** SQS `SentTimestamp` (epoch ms, as a string in the Lambda event), when present and sane. */
const sentAtOf = (record: SQSRecord): { sentAt?: number } => {
  const sentAt = Number(record.attributes?.SentTimestamp);
  return Number.isSafeInteger(sentAt) && sentAt > 0 ? { sentAt } : {};
};
