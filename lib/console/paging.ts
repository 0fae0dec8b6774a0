import * as z from 'zod/mini';
import '../domain/zodLocale.js';

/**
 * Paging and sorting for every console list. A list is collected up to a bound (`MAX_COLLECTED` rows:
 * operator reads of attention lists and search results, never a hot path), then sorted and cut into
 * pages, so a sort covers the whole list and not one storage page. Past the bound the answer says
 * `truncated`, and the page tells the operator to narrow the filter.
 */
export const MAX_COLLECTED = 1000;

export const pagingSchema = <K extends string>(keys: readonly [K, ...K[]], defaultSort: K) =>
  z.object({
    sort: z._default(z.enum(keys), defaultSort),
    dir: z._default(z.enum(['asc', 'desc']), 'asc'),
    page: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(10_000)), 1),
    pageSize: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(200)), 25),
  });

export interface Paging<K extends string> {
  sort: K;
  dir: 'asc' | 'desc';
  page: number;
  pageSize: number;
}

export interface Page<T, K extends string> extends Paging<K> {
  items: T[];
  total: number;
  pages: number;
  /** More rows existed than were collected: the list shows the first MAX_COLLECTED only. */
  truncated: boolean;
}

type SortValue = string | number | null | undefined;

const compare = (a: SortValue, b: SortValue): number => {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  return typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b));
};

/** Sorts by one key (ties: `tieBreak`, so pages are stable) and returns the requested page. */
export const sortAndPage = <T, K extends string>(
  items: readonly T[],
  paging: Paging<K>,
  keyOf: Readonly<Record<K, (item: T) => SortValue>>,
  tieBreak: (item: T) => string,
  truncated = false,
): Page<T, K> => {
  const by = keyOf[paging.sort];
  const sign = paging.dir === 'asc' ? 1 : -1;
  const sorted = [...items].sort((a, b) => {
    const primary = compare(by(a), by(b));
    // Empty values go last in either direction; only real values flip.
    const empty = by(a) === null || by(a) === undefined || by(b) === null || by(b) === undefined;
    return (empty ? primary : sign * primary) || tieBreak(a).localeCompare(tieBreak(b));
  });
  const pages = Math.max(1, Math.ceil(sorted.length / paging.pageSize));
  const page = Math.min(paging.page, pages);
  return {
    ...paging,
    page,
    items: sorted.slice((page - 1) * paging.pageSize, page * paging.pageSize),
    total: sorted.length,
    pages,
    truncated,
  };
};
