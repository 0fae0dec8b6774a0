import { describe, expect, it } from 'vitest';
import { sortAndPage } from '../../../lib/console/paging.js';

// lib/console/paging.ts: every console list is sorted whole, then cut into pages.
describe('paging', () => {
  it('sorts the whole list before cutting pages, keeps empty values last either way, and clamps the page', () => {
    const items = [{ k: 'b' }, { k: null }, { k: 'a' }, { k: 'c' }];
    const keyOf = { k: (i: { k: string | null }) => i.k };
    const tie = (i: { k: string | null }) => String(i.k);
    expect(
      sortAndPage(items, { sort: 'k', dir: 'asc', page: 1, pageSize: 2 }, keyOf, tie).items.map((i) => i.k),
    ).toEqual(['a', 'b']);
    const desc = sortAndPage(items, { sort: 'k', dir: 'desc', page: 9, pageSize: 3 }, keyOf, tie);
    expect([desc.page, desc.pages, desc.items.map((i) => i.k)]).toEqual([2, 2, [null]]);
  });
});
