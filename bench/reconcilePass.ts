import { systemClock } from '../lib/domain/clock.js';
import { type Channel, PurposeRegistry } from '../lib/domain/purposes.js';
import type { Ledger } from '../lib/ledger/port.js';
import { Reconciler } from '../lib/reconcile/Reconciler.js';
import type { Transport } from '../lib/transports/port.js';

export interface PassResult {
  pages: number;
  processed: number;
  resolved: number;
  via: string;
}

/** One reconcile pass with the real Reconciler over the `unknown` partition of the attention index. */
export const runReconcilePass = async (
  ledger: Ledger,
  transports: Readonly<Record<Channel, Transport>>,
): Promise<PassResult> => {
  const reconciler = new Reconciler({
    ledger,
    transports,
    purposes: new PurposeRegistry(),
    clock: systemClock,
    runId: 'bench',
  });
  const summary = await reconciler.runAll();
  return {
    pages: summary.pages,
    processed: summary.processed,
    resolved: summary.resolved,
    via: 'Reconciler.runAll',
  };
};
