/**
 * The order of a notification's archive lines, apart from lib/archive/bundle.ts (which reads the archive
 * through S3 or a folder): the console's timeline route orders lines with it, and importing the bundle
 * module for it put the S3 client on the console's module path.
 */
export type TimelineRow = Record<string, unknown>;

/** A delivery fact's archive line (`record_kind` `delivery_fact`, `to_state` `delivery:<fact>`). */
export const isFactLine = (row: TimelineRow): boolean => String(row.to_state ?? '').startsWith('delivery:');

/**
 * Archive lines in the order the ledger saw them, each saying whose clock its time is. A state
 * transition's `transition_at_ms` is the ledger's clock; a delivery fact's is the provider's (the time
 * the provider gives the event), which may read earlier than the acceptance it was recorded after (a
 * fast provider, or an answer lost on the wire). Ordering both by time would show a delivery before its
 * acceptance, so a fact is ordered by its ledger time instead: the later of the transition it was
 * recorded after (same dedupe key, same version) and the stream's arrival time of its write; ties keep
 * transitions first, then facts in the provider's order.
 */
export const orderedByLedger = <T extends TimelineRow>(
  rows: readonly T[],
): Array<T & { clock: 'ledger' | 'provider'; ledger_at_ms: number }> => {
  const transitionAt = new Map<string, number>();
  for (const row of rows)
    if (!isFactLine(row)) transitionAt.set(`${row.dedupe_key}#${row.version}`, Number(row.transition_at_ms));
  const withClock = rows.map((row) => {
    if (!isFactLine(row))
      return { ...row, clock: 'ledger' as const, ledger_at_ms: Number(row.transition_at_ms) };
    const anchor = transitionAt.get(`${row.dedupe_key}#${row.version}`);
    const arrival =
      row.stream_arrival_at_ms === null || row.stream_arrival_at_ms === undefined
        ? undefined
        : Number(row.stream_arrival_at_ms);
    const candidates = [anchor, arrival].filter((v): v is number => v !== undefined && Number.isFinite(v));
    return {
      ...row,
      clock: 'provider' as const,
      ledger_at_ms: candidates.length ? Math.max(...candidates) : Number(row.transition_at_ms),
    };
  });
  return withClock.sort(
    (a, b) =>
      a.ledger_at_ms - b.ledger_at_ms ||
      Number(a.clock === 'provider') - Number(b.clock === 'provider') ||
      Number(a.transition_at_ms) - Number(b.transition_at_ms) ||
      String(a.dedupe_key).localeCompare(String(b.dedupe_key)) ||
      Number(a.version) - Number(b.version),
  );
};
