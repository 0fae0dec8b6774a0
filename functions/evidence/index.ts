import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { functionConfig } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import { parseLambdaEvent } from '../../lib/evidence/events.js';
import { applyOptSignal } from '../../lib/evidence/optSignals.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { evidenceRecorderFor, optSignalsFor } from '../../lib/wiring.js';
import { powertoolsSink } from '../reconcile/metricsSink.js';

/**
 * Evidence Lambda: SES v2 configuration-set events (EventBridge) and End User Messaging SMS events
 * (SNS) → ledger transitions. An infrastructure failure throws, so the async invocation is retried and
 * then lands on the DLQ; an event that is not evidence is logged (without addresses) and acknowledged.
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

export const handler = async (event: unknown, context: Context): Promise<{ results: string[] }> => {
  logger.addContext(context);
  try {
    const results: string[] = [];
    for (const parsed of parseLambdaEvent(event)) {
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
    return { results };
  } finally {
    metrics.publishStoredMetrics();
  }
};
