import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describeCircuitReason } from '../transports/circuitReasons.js';
import { type CircuitView, failuresInWindow, readFailoverCircuits } from '../transports/health.js';
import type { ChannelCircuits, CircuitEntry, CircuitsReadModel } from './ports.js';

/** How many of a circuit's newest state changes the panel lists. */
export const CIRCUIT_HISTORY_SHOWN = 5;

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** One circuit as the panel shows it (times ISO, the reason in words, the newest changes first). */
export const circuitEntry = (
  view: CircuitView,
  position: number,
  windowSeconds: number,
  now: number,
): CircuitEntry => {
  const last = view.history.at(-1);
  const openUntil = iso(view.state === 'open' ? view.openUntil : undefined);
  const probeUntil = iso(view.state === 'half_open' ? view.probeUntil : undefined);
  return {
    provider: view.provider,
    position,
    state: view.state,
    failures: failuresInWindow(view, windowSeconds, now),
    windowSeconds,
    ...(openUntil ? { openUntil } : {}),
    ...(probeUntil ? { probeUntil } : {}),
    probeDue:
      (view.state === 'open' && (view.openUntil ?? 0) <= now) ||
      (view.state === 'half_open' && (view.probeUntil ?? 0) <= now),
    ...(view.state !== 'closed' && view.reason ? { reason: describeCircuitReason(view.reason) } : {}),
    ...(last
      ? { changedAt: iso(last.at)!, changedAgeSeconds: Math.max(0, Math.round((now - last.at) / 1000)) }
      : {}),
    history: view.history
      .slice(-CIRCUIT_HISTORY_SHOWN)
      .reverse()
      .map((h) => ({
        state: h.s.replace(/^circuit_/, ''),
        at: iso(h.at)!,
        by: h.by,
        why: describeCircuitReason(h.why),
      })),
  };
};

/**
 * The circuits panel's port over the ledger table's `health#<provider>` items (lib/transports/health.ts):
 * every failover channel's providers in order, one BatchGetItem for all of them (never a Scan).
 */
export const providerCircuitsReadModel = (
  doc: DynamoDBDocumentClient,
  table: string,
  chains: ReadonlyArray<{ channel: 'email' | 'sms'; providers: readonly string[] }>,
  windowSeconds: number,
): CircuitsReadModel => ({
  source: 'ledger: provider health items',
  circuits: async (now: number): Promise<ChannelCircuits[]> =>
    (await readFailoverCircuits(doc, table, chains)).map(({ channel, circuits }) => ({
      channel,
      providers: circuits.map((c) => c.provider),
      circuits: circuits.map((view, i) => circuitEntry(view, i + 1, windowSeconds, now)),
    })),
});
