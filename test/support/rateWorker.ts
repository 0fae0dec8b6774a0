import { parentPort, workerData } from 'node:worker_threads';
import { systemClock } from '../../lib/domain/clock.js';
import { drain, type RateWorkerSpec, rateWorker, type ThreadReport } from './rateWorld.js';

/**
 * One execution environment in its own thread (own event loop, own DynamoDB client, own pacer and
 * breaker): it drains its share of the burst and reports every channel outcome.
 */
const { spec, bodies, concurrency } = workerData as {
  spec: RateWorkerSpec;
  bodies: string[];
  concurrency: number;
};
const worker = rateWorker(spec, systemClock);
const outcomes = await drain(bodies, [worker], concurrency);
const report: ThreadReport = {
  workerId: spec.workerId,
  channels: [...outcomes.values()].flatMap((o) => o.channels),
  slotWriteUnits: worker.slots?.writeUnits ?? 0,
};
parentPort?.postMessage(report);
