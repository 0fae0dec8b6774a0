// The audit view: the named queries over the archive (their results sorted and paged in the page), the
// suppression list, and the operator's cancel and suppress forms.
import { api, session } from './api.js';
import { $, el, field, fill, pager, provenance, table } from './dom.js';
import { cancelForm, suppressForm } from './operator.js';
import { nextSort, readUrl, writeUrl } from './url.js';

/** Sorts and pages rows in the page (small lists the API returns whole), from the URL's `prefix.*` keys. */
export const localPage = (rows, prefix, sortKey) => {
  const s = readUrl();
  const sort = s[`${prefix}.sort`] || sortKey;
  const dir = s[`${prefix}.dir`];
  const pageSize = 25;
  const sorted = [...rows].sort((a, b) => {
    const x = a[sort];
    const y = b[sort];
    const order =
      typeof x === 'number' && typeof y === 'number'
        ? x - y
        : String(x ?? '').localeCompare(String(y ?? ''), undefined, { numeric: true });
    return dir === 'asc' ? order : -order;
  });
  const pages = Math.max(1, Math.ceil(sorted.length / pageSize));
  const page = Math.min(Number(s[`${prefix}.page`]) || 1, pages);
  return {
    items: sorted.slice((page - 1) * pageSize, page * pageSize),
    sort,
    dir,
    page,
    pages,
    total: rows.length,
    pageSize,
    truncated: false,
  };
};

const localTable = (rows, { prefix, sortKey, columns, label, attrs, empty, reload }) => {
  const page = localPage(rows, prefix, sortKey);
  return el(
    'div',
    {},
    table(columns, page.items, {
      attrs,
      caption: label,
      empty,
      sort: { key: page.sort, dir: page.dir },
      onSort: (key) => {
        const next = nextSort(page.sort, page.dir, key);
        writeUrl({ [`${prefix}.sort`]: next.sort, [`${prefix}.dir`]: next.dir, [`${prefix}.page`]: '1' });
        reload();
      },
    }),
    rows.length > page.pageSize
      ? pager(page, {
          label,
          onPage: (n) => {
            writeUrl({ [`${prefix}.page`]: String(n) });
            reload();
          },
          onPageSize: () => {},
        })
      : null,
  );
};

export const loadSuppressions = async () => {
  try {
    const s = await api('/api/suppressions');
    const rows = s.items.map((row) => ({
      ...row,
      channelsText: Object.entries(row.channels)
        .map(([c, why]) => `${c}: ${why}`)
        .join(', '),
    }));
    $('suppressions-body').replaceChildren(
      el('p', { class: 'provenance', text: provenance(s) }),
      localTable(rows, {
        prefix: 's',
        sortKey: 'tenant',
        label: 'Suppressed recipients',
        attrs: { 'data-testid': 'suppressions' },
        empty: 'nobody is suppressed',
        reload: loadSuppressions,
        columns: [
          { label: 'tenant', key: 'tenant', sort: 'tenant' },
          { label: 'recipient ref', key: 'recipientRef', sort: 'recipientRef' },
          { label: 'channels', key: 'channelsText', sort: 'channelsText' },
        ],
      }),
      ...(session.role === 'operator' ? [suppressForm(loadSuppressions)] : []),
    );
  } catch (error) {
    $('suppressions-body').replaceChildren(el('p', { class: 'muted', text: error.message }));
  }
};

let lastResult;
const renderResult = () => {
  if (!lastResult) return;
  fill(
    $('queries-body'),
    localTable(
      lastResult.rows.map((row) =>
        Object.fromEntries(
          Object.entries(row).map(([k, v]) => [
            k,
            typeof v === 'object' && v !== null ? JSON.stringify(v) : v,
          ]),
        ),
      ),
      {
        prefix: 'q',
        sortKey: lastResult.columns[0],
        label: `${lastResult.name}: results`,
        attrs: { 'data-testid': 'query-results' },
        empty: '(no rows)',
        reload: renderResult,
        columns: lastResult.columns.map((c) => ({ label: c, key: c, sort: c })),
      },
    ),
    lastResult.truncated ? el('p', { class: 'muted', text: 'first 1000 rows only' }) : null,
  );
};

export const loadQueries = async () => {
  try {
    const { items } = await api('/api/queries');
    const select = el('select', { id: 'q-name' });
    for (const q of items) select.append(el('option', { value: q.name, text: q.name }));
    const params = el('span', { class: 'filters' });
    const description = el('p', { class: 'muted', id: 'q-description' });
    const describe = () => {
      const q = items.find((i) => i.name === select.value);
      description.textContent = q?.description ?? '';
      params.replaceChildren(
        ...(q?.parameters ?? []).map((p) =>
          field(
            p.name,
            el('input', { 'data-param': p.name, title: p.description, size: 14, autocomplete: 'off' }),
          ),
        ),
      );
    };
    select.addEventListener('change', describe);
    describe();
    const run = async (event) => {
      event.preventDefault();
      const args = [...params.querySelectorAll('input')].map((i) => i.value);
      try {
        const r = await api('/api/queries/run', { method: 'POST', body: { name: select.value, args } });
        lastResult = { ...r, name: select.value };
        writeUrl({ 'q.sort': '', 'q.page': '1' });
        renderResult();
      } catch (error) {
        $('queries-body').replaceChildren(el('p', { class: 'bad', text: error.message }));
      }
    };
    $('queries-form').replaceChildren(
      el(
        'form',
        { class: 'filters', onsubmit: run, 'aria-label': 'Run a named query' },
        field('Query', select),
        params,
        el('button', { type: 'submit', text: 'Run' }),
      ),
      description,
    );
  } catch (error) {
    $('queries-form').replaceChildren(el('p', { class: 'muted', text: error.message }));
  }
};

export const initAudit = () => {
  if (session.role === 'operator') {
    $('cancel').hidden = false;
    $('cancel-body').replaceChildren(cancelForm());
  }
};
