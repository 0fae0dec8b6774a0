import { expandFact } from '../evidence/facts.js';
import type { DeliveryRecord } from '../ledger/port.js';

/**
 * Whose clock a time is. A row's history is written with the ledger's clock (the worker that made the
 * transition); a delivery fact carries the provider's own time for the event (SES `mail.timestamp`-style
 * fields, the SMS status time), which is another machine's clock. The two are never merged into one
 * sequence by time: a provider that delivers in 3 ms can stamp "delivered" before the ledger stamps
 * "accepted" (the answer travels back), and an answer lost on the wire makes the ledger learn of an
 * acceptance seconds after the provider delivered. Ordered by time alone, both look impossible.
 */
export type ClockName = 'ledger' | 'provider';

/** The states in which a row has been accepted by a provider (facts are recorded only in these). */
const ACCEPTED_STATES: ReadonlySet<string> = new Set(['accepted', 'resolved_accepted']);

export interface ClockedEntry {
  kind: 'transition' | 'fact';
  /** The state entered, or the fact (`delivered`, `bounced_permanent`, …). */
  what: string;
  /** Whose clock `at` is. */
  clock: ClockName;
  /** Epoch ms on `clock`. */
  at: number;
  by: string;
  why?: string;
  msg?: string;
  /** The row version the transition produced (facts: the version they were recorded after). */
  version: number;
  /**
   * A fact only: the ledger-clock time of the transition it was recorded after (a fact is only recorded
   * on an accepted row, or settles an `unknown` one). The fact's own time is the provider's.
   */
  recordedAfter?: { what: string; at: number };
  /**
   * Set when the provider's time is earlier than the ledger time it was recorded after: the sequence is
   * honest (recorded after), the times come from two clocks. Milliseconds the provider time is earlier.
   */
  providerEarlierByMs?: number;
}

/**
 * One row's timeline in the order the ledger saw it: its history (ledger clock) in version order, with
 * each delivery fact (provider clock) placed after the transition it was recorded after. A fact that
 * settled an `unknown`/`quarantined` row sits right after that settling transition (same source and
 * reason); any other fact after the row's acceptance. Facts among themselves keep the provider's order.
 * Reads the facts through the ledger's record type only (`row.delivery`), never raw attribute names.
 */
export const clockedTimeline = (row: DeliveryRecord): ClockedEntry[] => {
  const transitions: ClockedEntry[] = row.history.map((h, i) => ({
    kind: 'transition',
    what: h.s,
    clock: 'ledger',
    at: h.at,
    by: h.by,
    ...(h.why ? { why: h.why } : {}),
    ...(h.msg ? { msg: h.msg } : {}),
    version: i + 1,
  }));
  const facts = (row.delivery?.h ?? [])
    .map((f) => expandFact(f, row.providerMessageId))
    .sort((a, b) => a.at - b.at);
  const acceptedIndex = transitions.findIndex((t) => ACCEPTED_STATES.has(t.what));
  const after = new Map<number, ClockedEntry[]>();
  for (const fact of facts) {
    // The evidence transition this fact made, if it settled the row (same source, same reason).
    const settling = transitions.findIndex((t, i) => i >= 1 && t.by === fact.by && t.why === fact.why);
    const anchorIndex =
      settling >= 0 ? settling : acceptedIndex >= 0 ? acceptedIndex : transitions.length - 1;
    const anchor = transitions[anchorIndex];
    const entry: ClockedEntry = {
      kind: 'fact',
      what: fact.f,
      clock: 'provider',
      at: fact.at,
      by: fact.by,
      why: fact.why,
      ...(fact.msg ? { msg: fact.msg } : {}),
      version: anchor?.version ?? row.version,
      ...(anchor ? { recordedAfter: { what: anchor.what, at: anchor.at } } : {}),
      ...(anchor && fact.at < anchor.at ? { providerEarlierByMs: anchor.at - fact.at } : {}),
    };
    after.set(anchorIndex, [...(after.get(anchorIndex) ?? []), entry]);
  }
  return transitions.flatMap((t, i) => [t, ...(after.get(i) ?? [])]);
};

const iso = (ms: number) => new Date(ms).toISOString();

/** `1.461 s` / `5 ms`: how much earlier the provider's clock reads. */
export const formatGap = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(3)} s`);

/** One entry as a line that names its clock (the demo, `sendproof explain`). */
export const describeEntry = (entry: ClockedEntry): string => {
  const detail = [entry.why, entry.msg ? `msg ${entry.msg}` : undefined].filter(Boolean).join('; ');
  const base = `${entry.what} at ${iso(entry.at)} ${entry.clock} clock by ${entry.by}${detail ? ` (${detail})` : ''}`;
  if (entry.kind !== 'fact' || !entry.recordedAfter) return base;
  const relation =
    entry.providerEarlierByMs !== undefined
      ? `; ${formatGap(entry.providerEarlierByMs)} before the ledger recorded ${entry.recordedAfter.what} at ${iso(entry.recordedAfter.at)} (two clocks; recorded after it)`
      : '';
  return `${base}${relation}`;
};
