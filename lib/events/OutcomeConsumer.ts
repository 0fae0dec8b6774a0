import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Logger } from '../observability.js';
import { type SloObservation, sloObservationsOf } from '../slo/observations.js';
import { outcomeEventsOf } from './mapping.js';
import type { OutcomeEvent } from './outcomeEvent.js';
import type { OutcomeEventSink } from './port.js';

/** PutEvents takes at most 10 entries per call. */
export const PUBLISH_CHUNK = 10;

export interface OutcomeConsumerOptions {
  sink: OutcomeEventSink;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /**
   * Told the SLO observations of the records this batch finished (never of a record that will be read
   * again), once per batch: the function entry turns them into EMF metrics.
   */
  onObservations?: (observations: SloObservation[]) => void;
}

export type OutcomeStreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

interface Derived {
  record: DynamoDBRecord;
  events: OutcomeEvent[];
  observations: SloObservation[];
}

/**
 * The ledger stream's caller-facing consumer: every record becomes its outcome events (lib/events/mapping.ts)
 * and its SLO observations (lib/slo/observations.ts). Events are published in stream order, ten at a time;
 * the first record whose derivation or publication fails is reported as the batch's failure point
 * (ReportBatchItemFailures), so the event source reads it, and everything after it, again. A record read
 * again yields the same event ids: a consumer that deduplicates on `id` counts each once. Metrics are
 * emitted only for the records before the failure point, so a retried record is not counted twice.
 *
 *   records ─► derive (events, observations) ─► publish in order, 10 per call ─► first failure? checkpoint
 */
export const createOutcomeConsumer = (options: OutcomeConsumerOptions): OutcomeStreamHandler => {
  const { sink, logger } = options;
  return async (event) => {
    const derived: Derived[] = [];
    let failAt = event.Records.length;
    for (const [index, record] of event.Records.entries()) {
      try {
        derived.push({ record, events: outcomeEventsOf(record), observations: sloObservationsOf(record) });
      } catch (error) {
        logger.error('stream record not turned into outcome events', {
          eventId: record.eventID,
          sequenceNumber: record.dynamodb?.SequenceNumber,
          error: error instanceof Error ? error.name : 'unknown',
        });
        failAt = index;
        break;
      }
    }
    // Publish in order; an event's record index tells where a failure puts the checkpoint.
    const queue = derived.flatMap((d, index) => d.events.map((e) => ({ event: e, index })));
    for (let start = 0; start < queue.length; start += PUBLISH_CHUNK) {
      const chunk = queue.slice(start, start + PUBLISH_CHUNK);
      let failed: Set<string>;
      try {
        failed = new Set((await sink.publish(chunk.map((c) => c.event))).failedIds);
      } catch (error) {
        logger.error('outcome events not published', {
          error: error instanceof Error ? error.name : 'unknown',
        });
        failed = new Set(chunk.map((c) => c.event.id));
      }
      const first = chunk.find((c) => failed.has(c.event.id));
      if (first) {
        logger.error('outcome events not published; the stream will deliver them again', {
          failed: failed.size,
          sequenceNumber: event.Records[first.index]?.dynamodb?.SequenceNumber,
        });
        failAt = Math.min(failAt, first.index);
        break;
      }
    }
    const done = derived.slice(0, failAt);
    const published = done.reduce((n, d) => n + d.events.length, 0);
    if (published > 0) logger.info('outcome events published', { events: published, records: done.length });
    options.onObservations?.(done.flatMap((d) => d.observations));
    const failed = event.Records[failAt]?.dynamodb?.SequenceNumber;
    return { batchItemFailures: failed ? [{ itemIdentifier: failed }] : [] };
  };
};
