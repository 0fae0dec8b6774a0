import { Logger } from '@aws-lambda-powertools/logger';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { dynamoDocumentClient } from '../../lib/aws/dynamoClients.js';
import { eventBridgeClient } from '../../lib/aws/eventBridgeClient.js';
import { failsOver, functionConfig } from '../../lib/config.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { EventBridgeOutcomeSink } from '../../lib/events/EventBridgeOutcomeSink.js';
import { createOutcomeConsumer } from '../../lib/events/OutcomeConsumer.js';
import { SERVICE_NAME } from '../../lib/observability.js';
import { DynamoReportCounters } from '../../lib/transports/ReportCounters.js';
import { publishSloMetrics } from './emf.js';

/**
 * The ledger stream's caller-facing consumer: outcome events onto the EventBridge bus, SLO metrics as
 * EMF. Only wiring lives here; the logic is lib/events/OutcomeConsumer.ts (events: lib/events/mapping.ts,
 * metrics: lib/slo/observations.ts). Retries, bisection and the on-failure queue are event-source
 * settings (infra/constructs/OutcomeEvents.ts).
 *
 * With failover and the ledger table configured (infra/NotificationLedger.ts binds both then), the consumer
 * also keeps the providers' delivery-report counters (lib/transports/reportLag.ts), which the
 * reconcile run judges.
 */
const config = functionConfig('outcomes');
const logger = new Logger({ serviceName: SERVICE_NAME });
const purposes = PurposeRegistry.withOverrides(config.purposes);
const consume = createOutcomeConsumer({
  sink: new EventBridgeOutcomeSink(
    eventBridgeClient(clientOptionsFor(config, 'endpointEventBridge')),
    config.eventBusName,
  ),
  logger,
  onObservations: (observations) => publishSloMetrics(observations, purposes),
  ...(config.ledgerTable && failsOver(config)
    ? {
        reports: {
          counters: new DynamoReportCounters(
            dynamoDocumentClient(clientOptionsFor(config, 'endpointDynamoDb')),
            config.ledgerTable,
          ),
          lagMs: config.providerCircuit.reportLagSeconds * 1000,
        },
      }
    : {}),
});

export const handler = async (
  event: DynamoDBStreamEvent,
  context: Context,
): Promise<DynamoDBBatchResponse> => {
  logger.addContext(context);
  return consume(event);
};
