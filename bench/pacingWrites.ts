import { systemClock } from '../lib/domain/clock.js';
import { Admission } from '../lib/rate/Admission.js';
import { Pacer, TokenSlots } from '../lib/rate/Pacer.js';
import { rateSettingsSchema } from '../lib/rate/settings.js';
import {
  type BenchDynamo,
  createLedgerTables,
  resetIntentBody,
  type SimulatorProcess,
  wireDispatcher,
} from './stack.js';
import { runPool } from './throughput.js';

export interface PacingWritesRow {
  environments: number;
  perSecond: number;
  /** The slot length in force (the default). */
  slotMs: number;
  notifications: number;
  /** Write units the shared token slots consumed (refused conditional writes included). */
  slotWriteUnits: number;
  writeUnitsPerNotification: number;
  sendsPerSecond: number;
}

/**
 * What pacing adds: `notifications` through `environments` dispatchers (each its own pacer, as Lambda
 * execution environments would be; `concurrency` records each) sharing one transport pace of
 * `perSecond`. The simulator itself is unlimited; the shared slots do the pacing.
 */
export const measurePacingWrites = async (
  dynamo: BenchDynamo,
  sim: SimulatorProcess,
  sizes: { notifications: number; perSecond: number; concurrency: number; environments: number[] },
  progress: (line: string) => void,
): Promise<PacingWritesRow[]> => {
  const rows: PacingWritesRow[] = [];
  for (const environments of sizes.environments) {
    const tables = await createLedgerTables(dynamo.raw, `pacing-${environments}`);
    const settings = rateSettingsSchema().parse({ transports: { rest: { perSecond: sizes.perSecond } } });
    const slots = Array.from({ length: environments }, () => new TokenSlots(dynamo.doc, tables.ledgerTable));
    const dispatchers = slots.map(
      (s, i) =>
        wireDispatcher({
          doc: dynamo.doc,
          simulatorUrl: sim.url,
          workerId: `dispatch:pacing-${i}`,
          ...tables,
          admission: new Admission({
            pacer: new Pacer({ slots: s, settings, now: () => systemClock.now() }),
            now: () => systemClock.now(),
          }),
        }).dispatcher,
    );
    const perEnvironment = Math.ceil(sizes.notifications / environments);
    const elapsedMs = Math.max(
      ...(await Promise.all(
        dispatchers.map((d, e) =>
          runPool(perEnvironment, sizes.concurrency, async (i) => {
            await d.handle(resetIntentBody(`pace-${environments}-${e}-${i}`), { messageId: `p-${e}-${i}` });
          }),
        ),
      )),
    );
    const notifications = perEnvironment * environments;
    const slotWriteUnits = slots.reduce((n, s) => n + s.writeUnits, 0);
    const row = {
      environments,
      perSecond: sizes.perSecond,
      slotMs: settings.transports.rest!.slotMs,
      notifications,
      slotWriteUnits,
      writeUnitsPerNotification: Number((slotWriteUnits / notifications).toFixed(3)),
      sendsPerSecond: Number((notifications / (elapsedMs / 1000)).toFixed(1)),
    };
    progress(
      `pacing: ${environments} environment(s) at ${sizes.perSecond}/s: ${row.writeUnitsPerNotification} WCU/notification, ${row.sendsPerSecond} sends/s`,
    );
    rows.push(row);
  }
  return rows;
};
