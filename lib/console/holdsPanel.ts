import { activeHolds } from '../rate/TransportHolds.js';
import type { HoldsReadModel, OpenHold } from './ports.js';

/** The holds panel's port over the ledger table's hold items (lib/rate/TransportHolds.ts). */
export const transportHoldsReadModel = (
  doc: Parameters<typeof activeHolds>[0],
  table: string,
  transports: readonly string[],
): HoldsReadModel => ({
  source: 'ledger: transport hold items',
  open: async (): Promise<OpenHold[]> =>
    (await activeHolds(doc, table, transports)).map((h) => ({
      kind: 'transport_hold',
      name: h.transport,
      since: new Date(h.since).toISOString(),
      reason: h.reason,
      until: new Date(h.until ?? h.probeAt).toISOString(),
    })),
});
