import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Logger } from '../observability.js';
import { type SloObservation, sloObservationsOf } from '../slo/observations.js';
import type { ReportCounterStore } from '../transports/ReportCounters.js';
import { type ReportTally, reportTalliesOf, sumTallies } from '../transports/reportLag.js';
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
  /**
   * The providers' delivery-report counters (lib/transports/reportLag.ts): the batch's tallies, summed per
   * (provider, acceptance minute), are added with one write per counter per batch. `lagMs`: a report
   * later than this after its acceptance is not counted as reported. Absent: nothing is counted.
   */
  reports?: { counters: Pick<ReportCounterStore, 'add'>; lagMs: number };
}

export type OutcomeStreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

interface Derived {
  record: DynamoDBRecord;
  events: OutcomeEvent[];
  observations: SloObservation[];
  tallies: ReportTally[];
}

/**
 * The ledger stream's caller-facing consumer: every record becomes its outcome events (lib/events/mapping.ts)
 * and its SLO observations (lib/slo/observations.ts). Events are published in stream order, ten at a time;
 * the first record whose derivation or publication fails is reported as the batch's failure point
 * (ReportBatchItemFailures), so the event source reads it, and everything after it, again. A record read
 * again yields the same event ids: a consumer that deduplicates on `id` counts each once. Metrics are
 * emitted only for the records before the failure point, so a retried record is not counted twice.
 *
 * The delivery-report counters are counted the same way: only the records before the failure point, one
 * write per (provider, minute) counter; a counter that cannot be written moves the failure point back to
 * the first record that adds to it (and takes back what the counters written before it got from the
 * records from there on), so a record read again is counted once.
 *
 *   records ─► derive (events, observations, report tallies) ─► publish in order, 10 per call
 *           ─► add the report counters of the records before the first failure ─► checkpoint
 */
export const createOutcomeConsumer = (options: OutcomeConsumerOptions): OutcomeStreamHandler => {
  const { sink, logger } = options;
  return async (event) => {
    const derived: Derived[] = [];
    let failAt = event.Records.length;
    for (const [index, record] of event.Records.entries()) {
      try {
        derived.push({
          record,
          events: outcomeEventsOf(record),
          observations: sloObservationsOf(record),
          tallies: options.reports ? reportTalliesOf(record, options.reports.lagMs) : [],
        });
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
    if (options.reports) failAt = await countReports(derived, failAt, options.reports.counters, logger);
    const done = derived.slice(0, failAt);
    const published = done.reduce((n, d) => n + d.events.length, 0);
    if (published > 0) logger.info('outcome events published', { events: published, records: done.length });
    options.onObservations?.(done.flatMap((d) => d.observations));
    const failed = event.Records[failAt]?.dynamodb?.SequenceNumber;
    return { batchItemFailures: failed ? [{ itemIdentifier: failed }] : [] };
  };
};

/**
 * Adds the report tallies of `derived[0, failAt)`, one write per counter in the order of the first record
 * that adds to it; returns the failure point, earlier when a counter could not be written. The counters
 * written before that one give back what records from the new failure point on added (they are read
 * again); if that too fails, those records are counted twice (logged): the one at-least-once case left.
 */
const countReports = async (
  derived: readonly Derived[],
  failAt: number,
  counters: Pick<ReportCounterStore, 'add'>,
  logger: OutcomeConsumerOptions['logger'],
): Promise<number> => {
  const sums = sumTallies(derived.slice(0, failAt).map((d) => d.tallies));
  for (const [i, counter] of sums.entries()) {
    try {
      await counters.add(counter);
    } catch (error) {
      const cut = counter.firstIndex;
      logger.error('delivery report counter not written; the stream will deliver the records again', {
        error: error instanceof Error ? error.name : 'unknown',
        sequenceNumber: derived[cut]?.record.dynamodb?.SequenceNumber,
      });
      const written = new Set(sums.slice(0, i).map((c) => `${c.provider}#${c.bucket}`));
      for (const back of sumTallies(derived.slice(cut, failAt).map((d) => d.tallies))) {
        if (!written.has(`${back.provider}#${back.bucket}`)) continue;
        await counters
          .add({ ...back, accepted: -back.accepted, reported: -back.reported })
          .catch((undo: unknown) =>
            logger.error('delivery report counter not taken back; records read again count twice', {
              error: undo instanceof Error ? undo.name : 'unknown',
            }),
          );
      }
      return cut;
    }
  }
  return failAt;
};
