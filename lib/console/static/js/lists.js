// The row lists: the attention lists (unknown, quarantined, retry_wait, stalled) and the search results.
// Both are sorted and paged by the API over the whole list; their filters, sort and page are in the URL.
import { api, session } from './api.js';
import { $, age, el, pager, provenance, setStatus, table } from './dom.js';
import { decisionControls, selection } from './operator.js';
import { nextSort, readUrl, writeUrl } from './url.js';

const yesNo = (value) => (value === undefined || value === null ? '?' : value ? 'yes' : 'no');

/** The columns every row list shows; `onOpen` opens a row's timeline. */
const rowColumns = (onOpen, { selectable }) => [
  ...(selectable
    ? [
        {
          label: '',
          srLabel: 'select',
          render: (row) =>
            el('input', {
              type: 'checkbox',
              'aria-label': `select ${row.dedupeKey}`,
              'data-key': row.dedupeKey,
              checked: selection.has(row.dedupeKey),
              onchange: (event) => {
                if (event.target.checked) selection.add(row.dedupeKey);
                else selection.delete(row.dedupeKey);
                selection.changed();
              },
            }),
        },
      ]
    : []),
  {
    label: 'dedupe key',
    sort: 'dedupeKey',
    render: (row) =>
      el('button', {
        type: 'button',
        class: 'link key',
        text: row.dedupeKey,
        'aria-label': `timeline of ${row.dedupeKey}`,
        onclick: () => onOpen(row.dedupeKey),
      }),
  },
  { label: 'state', key: 'state', sort: 'state' },
  { label: 'event', sort: 'eventId', render: (row) => el('span', { class: 'event-id', text: row.eventId }) },
  { label: 'tenant', key: 'tenant', sort: 'tenant' },
  { label: 'purpose', key: 'purpose', sort: 'purpose' },
  { label: 'channel', key: 'channel', sort: 'channel' },
  { label: 'age', render: (row) => age(row.ageSeconds), num: true, sort: 'age' },
  { label: 'updated', key: 'updatedAt', sort: 'updatedAt' },
  { label: 'reason', key: 'reason' },
  { label: 'transport', key: 'transport' },
  { label: 'lookup?', render: (row) => yesNo(row.capability?.lookup) },
  { label: 'replay?', render: (row) => yesNo(row.capability?.replay) },
];

let attentionRequest = 0;
export const loadAttention = async (onOpen) => {
  const request = ++attentionRequest;
  const s = readUrl();
  const params = new URLSearchParams({
    list: s.list,
    sort: s['a.sort'],
    dir: s['a.dir'],
    page: s['a.page'],
    pageSize: s['a.size'],
  });
  for (const [key, name] of [
    ['a.tenant', 'tenant'],
    ['a.purpose', 'purpose'],
    ['a.channel', 'channel'],
    ['a.age', 'minAgeSeconds'],
  ])
    if (s[key]) params.set(name, s[key]);
  const page = await api(`/api/attention?${params}`);
  if (request !== attentionRequest) return;
  selection.clear();
  const reload = (patch) => {
    writeUrl(patch);
    loadAttention(onOpen).catch((e) => setStatus(e.message, 'bad'));
  };
  $('attention-body').replaceChildren(
    el('p', { class: 'provenance', text: provenance(page) }),
    table(rowColumns(onOpen, { selectable: session.role === 'operator' }), page.items, {
      attrs: { 'data-testid': 'attention-table' },
      caption: `${page.list} rows, sorted by ${page.sort} (${page.dir === 'asc' ? 'ascending' : 'descending'})`,
      rowAttrs: (row) => ({ 'data-key': row.dedupeKey, 'data-state': row.state }),
      empty: `no ${page.list} rows`,
      sort: { key: page.sort, dir: page.dir },
      onSort: (key) => {
        const next = nextSort(page.sort, page.dir, key);
        reload({ 'a.sort': next.sort, 'a.dir': next.dir, 'a.page': '1' });
      },
    }),
    pager(page, {
      label: 'attention list',
      onPage: (n) => reload({ 'a.page': String(n) }),
      onPageSize: (n) => reload({ 'a.size': String(n), 'a.page': '1' }),
    }),
  );
  decisionControls(() => loadAttention(onOpen));
};

/** The attention filters, from and into the URL. */
export const initAttentionFilters = (onOpen) => {
  const s = readUrl();
  $('f-list').value = s.list;
  $('f-tenant').value = s['a.tenant'];
  $('f-purpose').value = s['a.purpose'];
  $('f-channel').value = s['a.channel'];
  $('f-age').value = s['a.age'];
  $('attention-form').addEventListener('submit', (event) => {
    event.preventDefault();
    writeUrl({
      list: $('f-list').value,
      'a.tenant': $('f-tenant').value.trim(),
      'a.purpose': $('f-purpose').value.trim(),
      'a.channel': $('f-channel').value,
      'a.age': $('f-age').value.trim(),
      'a.page': '1',
    });
    loadAttention(onOpen).catch((e) => setStatus(e.message, 'bad'));
  });
};

let searchRequest = 0;
export const loadSearch = async (onOpen) => {
  const s = readUrl();
  if (!s['f.value']) {
    $('find-body').replaceChildren(
      el('p', {
        class: 'muted',
        text: 'Find a notification by business event id, recipient ref, provider message id or dedupe key.',
      }),
    );
    return;
  }
  const request = ++searchRequest;
  const params = new URLSearchParams({
    field: s['f.field'],
    value: s['f.value'],
    sort: s['f.sort'],
    dir: s['f.dir'],
    page: s['f.page'],
    pageSize: s['f.size'],
  });
  const found = await api(`/api/search?${params}`);
  if (request !== searchRequest) return;
  const reload = (patch) => {
    writeUrl(patch);
    loadSearch(onOpen).catch((e) => setStatus(e.message, 'bad'));
  };
  $('find-body').replaceChildren(
    el('p', { class: 'provenance', text: provenance(found) }),
    table(rowColumns(onOpen, { selectable: false }), found.items, {
      attrs: { 'data-testid': 'find-table' },
      caption: `rows whose ${found.field} is ${found.value}`,
      rowAttrs: (row) => ({ 'data-key': row.dedupeKey, 'data-state': row.state }),
      empty: `no row has ${found.field} ${found.value} (a row past its retention is only in the archive: try the audit queries)`,
      sort: { key: found.sort, dir: found.dir },
      onSort: (key) => {
        const next = nextSort(found.sort, found.dir, key);
        reload({ 'f.sort': next.sort, 'f.dir': next.dir, 'f.page': '1' });
      },
    }),
    pager(found, {
      label: 'search results',
      onPage: (n) => reload({ 'f.page': String(n) }),
      onPageSize: (n) => reload({ 'f.size': String(n), 'f.page': '1' }),
    }),
  );
};

export const initFind = (onOpen) => {
  const s = readUrl();
  $('find-field').value = s['f.field'];
  $('find-value').value = s['f.value'];
  $('find-form').addEventListener('submit', (event) => {
    event.preventDefault();
    writeUrl({ 'f.field': $('find-field').value, 'f.value': $('find-value').value.trim(), 'f.page': '1' });
    loadSearch(onOpen).catch((e) => setStatus(`find: ${e.message}`, 'bad'));
  });
};
