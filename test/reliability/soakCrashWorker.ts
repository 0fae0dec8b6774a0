/**
 * Last-receive crashes for the soak: a dispatcher process built exactly as the dispatch function is
 * (lib/dispatchRuntime.ts from the local stack's environment: same tables, templates, transports, content-hash
 * key and seal key), handed intents on their LAST receive (ApproximateReceiveCount = the queue's
 * maxReceiveCount). Each dispatch stops dead at its planned edge (after_seal, after_claim or
 * after_dispatching) and reports it over IPC; once every dispatch has stopped, the parent kills the
 * whole process with SIGKILL. The queue would not deliver these messages again (the next receive moves
 * them to the DLQ), so only the ledger's sweep can finish them.
 *
 *   node --import tsx test/reliability/soakCrashWorker.ts '<json SoakCrashInput>'   (env: the stack's)
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { functionConfig } from '../../lib/config.js';
import { type DispatchEdge, Dispatcher } from '../../lib/dispatch/Dispatcher.js';
import { createRuntime } from '../../lib/dispatchRuntime.js';
import { systemClock } from '../../lib/domain/clock.js';
import { SERVICE_NAME } from '../../lib/observability.js';

export interface SoakCrashInput {
  crashes: Array<{ body: string; dedupeKey: string; edge: DispatchEdge }>;
}

/** What the process tells its parent: one line per dispatch that reached its edge and stopped there. */
export interface SoakCrashMessage {
  stopped: string;
  edge: DispatchEdge;
}

const input = JSON.parse(process.argv[2] ?? '{"crashes":[]}') as SoakCrashInput;
const config = functionConfig('dispatch');
if (config.maxReceiveCount === undefined) throw new Error('the soak crash worker needs the maxReceiveCount');
const planned = new Map(input.crashes.map((c) => [c.dedupeKey, c.edge]));
const runtime = await createRuntime(config);
const dispatcher = new Dispatcher({
  ...runtime,
  clock: systemClock,
  workerId: `dispatch:soak-last-receive-${process.pid}`,
  leaseMs: config.leaseSeconds * 1000,
  maxReceiveCount: config.maxReceiveCount,
  ...(config.parkGraceSeconds !== undefined ? { parkGraceMs: config.parkGraceSeconds * 1000 } : {}),
  logger: new Logger({ serviceName: SERVICE_NAME }),
  probe: (edge, context) => {
    if (planned.get(context.dedupeKey) !== edge) return;
    planned.delete(context.dedupeKey);
    process.send?.({ stopped: context.dedupeKey, edge } satisfies SoakCrashMessage);
    // Nothing after the edge ever runs: the parent kills the process once every dispatch stopped.
    return new Promise<void>(() => undefined);
  },
});

// A stopped dispatch holds no handle, so with every dispatch stopped the event loop could empty and the
// process exit by itself (code 0) before the parent's SIGKILL lands: it must only ever die killed.
setInterval(() => undefined, 3_600_000);

for (const [i, crash] of input.crashes.entries())
  void dispatcher
    .handle(crash.body, { messageId: `soak-last-receive-${i}`, receiveCount: config.maxReceiveCount })
    .then(() => process.send?.({ finished: crash.dedupeKey }));
