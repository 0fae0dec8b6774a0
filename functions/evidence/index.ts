import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { functionConfig } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import {
  isSqsBatch,
  type ParsedEvent,
  parseLambdaEvent,
  parseQueuedEvent,
} from '../../lib/evidence/events.js';
import { applyOptSignal } from '../../lib/evidence/optSignals.js';
import { evidenceRecorderFor, optSignalsFor } from '../../lib/evidenceWiring.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { powertoolsSink, publishMetrics } from '../reconcile/metricsSink.js';

/**
 * Evidence Lambda: SES v2 configuration-set events (EventBridge) and End User Messaging SMS events (SNS),
 * both delivered to the evidence queue and read in batches → ledger transitions and facts. A record whose
 * recording fails (an infrastructure error, a row raced every try) is reported as a batch item failure
 * (Powertools batch): it alone comes back, and after the queue's receive limit lands on the DLQ. An
 * event that is not evidence is logged (without addresses) and acknowledged. A direct invocation
 * (EventBridge or SNS event) is still understood, one event at a time.
 */
const config = functionConfig('evidence');
const logger = new Logger({ serviceName: SERVICE_NAME });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
const recorder = evidenceRecorderFor(config, {
  clock: systemClock,
  logger,
  metrics: powertoolsSink(metrics),
});
const signals = optSignalsFor(config, { clock: systemClock, logger });

const recordAll = async (events: ParsedEvent[]): Promise<string[]> => {
  const results: string[] = [];
  for (const parsed of events) {
    if (parsed.kind === 'ignored') {
      // A two-way STOP/START reply (SNS) acts on the suppression list (lib/evidence/optSignals.ts).
      const applied = parsed.signal && signals ? await applyOptSignal(parsed.signal, signals) : undefined;
      if (applied && applied !== 'not_an_opt_signal') {
        results.push(`signal:${applied}`);
        continue;
      }
      logger.info('provider event is not evidence', { source: parsed.source, reason: parsed.reason });
      results.push(`ignored:${parsed.reason}`);
      continue;
    }
    const result = await recorder.record(parsed.evidence);
    results.push(result.kind);
  }
  return results;
};

const processor = new BatchProcessor(EventType.SQS);

export const handler = async (
  event: unknown,
  context: Context,
): Promise<SQSBatchResponse | { results: string[] }> => {
  logger.addContext(context);
  try {
    if (isSqsBatch(event)) {
      return await processPartialResponse(
        event as SQSEvent,
        async (record: SQSRecord) => (await recordAll(parseQueuedEvent(record.body))).join(','),
        processor,
        // A batch whose every record failed is still a partial response: each comes back on its own.
        { context, throwOnFullBatchFailure: false },
      );
    }
    return { results: await recordAll(parseLambdaEvent(event)) };
  } finally {
    publishMetrics(metrics);
  }
};
