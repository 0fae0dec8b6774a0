import { join } from 'node:path';
import { publishSloMetrics } from '../../functions/outcomes/emf.js';
import { LocalStreamPoller } from '../archive/LocalStreamPoller.js';
import { dynamoClient } from '../aws/clients.js';
import { dynamoStreamsClient } from '../aws/storageClients.js';
import type { PurposeRegistry } from '../domain/purposes.js';
import { LocalEventBus } from '../events/LocalEventBus.js';
import { createOutcomeConsumer } from '../events/OutcomeConsumer.js';
import type { Logger } from '../observability.js';

/** The local event bus's files inside its folder. */
export const LOCAL_EVENTS = { log: 'outcomes.jsonl', deadLetter: 'dead-letter.jsonl' } as const;

/**
 * The outcome events of the local stack: the consumer functions/outcomes runs in AWS, fed by its own
 * poller on DynamoDB Local's stream (a short window, as the AWS event source's 1 s), publishing to the
 * local event bus (lib/events/LocalEventBus.ts) and emitting the SLO metrics as EMF to the functions log.
 */
export const startLocalOutcomes = async (options: {
  region: string;
  dynamoEndpoint: string;
  ledgerTable: string;
  eventsDir: string;
  endpoints: ReadonlyArray<{ url: string; tenant?: string }>;
  purposes: PurposeRegistry;
  logger: Pick<Logger, 'info' | 'warn' | 'error'> & { debug(message: string, ...extra: unknown[]): void };
}) => {
  const endpoint = { region: options.region, endpoint: options.dynamoEndpoint };
  const bus = new LocalEventBus({
    logFile: join(options.eventsDir, LOCAL_EVENTS.log),
    deadLetterFile: join(options.eventsDir, LOCAL_EVENTS.deadLetter),
    endpoints: options.endpoints,
    logger: options.logger,
  });
  const poller = new LocalStreamPoller({
    streams: dynamoStreamsClient(endpoint),
    streamArn: await LocalStreamPoller.streamArnOf(dynamoClient(endpoint), options.ledgerTable),
    region: options.region,
    handler: createOutcomeConsumer({
      sink: bus,
      logger: options.logger,
      onObservations: (observations) => publishSloMetrics(observations, options.purposes),
    }),
    logger: options.logger,
    batchSize: 100,
    maxBatchingWindowMs: 0,
    intervalMs: 250,
  });
  poller.start();
  return {
    bus,
    async stop() {
      await poller.stop();
      await poller.pollOnce();
      await poller.flush();
      await bus.drain();
    },
  };
};
