import { systemClock } from '../lib/domain/clock.js';
import type { Channel } from '../lib/domain/purposes.js';
import { PurposeRegistry } from '../lib/domain/purposes.js';
import type { Ledger } from '../lib/ledger/port.js';
import type { Transport } from '../lib/transports/port.js';

/**
 * One reconcile pass over the `unknown` partition of the attention index. It runs the real Reconciler
 * (lib/reconcile/Reconciler.ts) when that module is present, and otherwise does what a pass does per
 * page — `ledger.listAttention('unknown')`, 25 rows a page — and resolves by lookup.
 *
 * The module is loaded by a computed specifier so the benchmark still builds while the reconciler is
 * being written; the small interface below is all it relies on.
 */
interface ReconcilerLike {
  runAll(): Promise<{ pages: number; processed: number; resolved: number }>;
}
type ReconcilerConstructor = new (deps: {
  ledger: Ledger;
  transports: Readonly<Record<Channel, Transport>>;
  purposes: PurposeRegistry;
  clock: typeof systemClock;
  runId: string;
}) => ReconcilerLike;

const RECONCILER_MODULE = '../lib/reconcile/Reconciler.js';

let loaded: ReconcilerConstructor | null | undefined;
const loadReconciler = async (): Promise<ReconcilerConstructor | null> => {
  if (loaded !== undefined) return loaded;
  try {
    const module = (await import(RECONCILER_MODULE)) as { Reconciler?: ReconcilerConstructor };
    loaded = typeof module.Reconciler === 'function' ? module.Reconciler : null;
  } catch {
    loaded = null;
  }
  return loaded;
};

export interface PassResult {
  pages: number;
  processed: number;
  resolved: number;
  via: string;
}

export const runReconcilePass = async (
  ledger: Ledger,
  transports: Readonly<Record<Channel, Transport>>,
): Promise<PassResult> => {
  const Reconciler = await loadReconciler();
  if (Reconciler) {
    const reconciler = new Reconciler({
      ledger,
      transports,
      purposes: new PurposeRegistry(),
      clock: systemClock,
      runId: 'bench',
    });
    const summary = await reconciler.runAll();
    return { ...summary, via: 'Reconciler.runAll' };
  }
  let cursor: string | undefined;
  let pages = 0;
  let processed = 0;
  let resolved = 0;
  do {
    const page = await ledger.listAttention('unknown', { limit: 25, ...(cursor ? { cursor } : {}) });
    pages += 1;
    for (const row of page.items) {
      processed += 1;
      const found = await transports[row.channel].lookup?.(row.idempotencyKey, row.providerMessageId);
      if (found?.kind !== 'accepted') continue;
      const result = await ledger.transition({
        pk: row.pk,
        from: 'unknown',
        to: 'accepted',
        expectedVersion: row.version,
        by: 'reconciler:bench',
        why: 'lookup:accepted',
        set: { providerMessageId: found.providerMessageId },
        now: Date.now(),
      });
      if (result.kind === 'ok') resolved += 1;
    }
    cursor = page.cursor;
  } while (cursor);
  return { pages, processed, resolved, via: 'ledger.listAttention paging (no lib/reconcile)' };
};
