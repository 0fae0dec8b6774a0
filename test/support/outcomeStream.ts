import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { createArchiver } from '../../lib/archive/archiver.js';
import { LocalStreamPoller, type StreamBatchHandler } from '../../lib/archive/LocalStreamPoller.js';
import { dynamoStreamsClient } from '../../lib/aws/storageClients.js';
import { LocalEventBus } from '../../lib/events/LocalEventBus.js';
import { createOutcomeConsumer } from '../../lib/events/OutcomeConsumer.js';
import type { SloObservation } from '../../lib/slo/observations.js';
import { localDynamo } from './dynamo.js';

const quiet = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
};

/** A poller on a harness table's stream (DynamoDB Local), as the Lambda event source would feed one consumer. */
export const streamPoller = async (
  table: string,
  handler: StreamBatchHandler,
): Promise<LocalStreamPoller> => {
  const { raw, endpoint } = localDynamo();
  return new LocalStreamPoller({
    streams: dynamoStreamsClient({ region: 'us-east-1', endpoint }),
    streamArn: await LocalStreamPoller.streamArnOf(raw, table),
    handler,
    batchSize: 1000,
    maxBatchingWindowMs: 0,
  });
};

/**
 * The caller-facing consumer on a table's stream: outcome events to a local event bus (a JSON Lines file
 * and, by POST, the given endpoints), SLO observations collected. `drain()` reads the stream to its end
 * and waits for the endpoint deliveries.
 */
export const startOutcomeStream = async (
  table: string,
  endpoints: Array<{ url: string; tenant?: string }> = [],
) => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-outcomes-'));
  const bus = new LocalEventBus({
    logFile: join(dir, 'outcomes.jsonl'),
    deadLetterFile: join(dir, 'dead-letter.jsonl'),
    endpoints,
    logger: quiet,
    backoffMs: 20,
  });
  const observations: SloObservation[] = [];
  const handler = createOutcomeConsumer({
    sink: bus,
    logger: quiet,
    onObservations: (o) => observations.push(...o),
  });
  const poller = await streamPoller(table, handler);
  return {
    dir,
    bus,
    handler,
    observations,
    async drain() {
      while ((await poller.pollOnce()) > 0);
      await poller.flush();
      await bus.drain();
    },
  };
};

/** The archiver on a table's stream, writing to the local S3 and a mirror folder (the DuckDB audit's input). */
export const startArchiveStream = async (table: string, s3: S3Client, bucket: string) => {
  const mirrorDir = mkdtempSync(join(tmpdir(), 'sendproof-archive-'));
  const poller = await streamPoller(table, createArchiver({ s3, bucket, mirrorDir, logger: quiet }));
  return {
    mirrorDir,
    async drain() {
      while ((await poller.pollOnce()) > 0);
      await poller.flush();
    },
  };
};
