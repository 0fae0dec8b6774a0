// DOM helpers. No innerHTML anywhere: every value reaches the page through textContent (or an attribute
// set with setAttribute on an element we created), so a hostile string in the ledger (an event id like
// <img src=x onerror=...>) stays text.

export const $ = (id) => document.getElementById(id);

export const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'text') node.textContent = value;
    else if (key === 'onclick') node.addEventListener('click', value);
    else if (key === 'onchange') node.addEventListener('change', value);
    else if (key === 'onsubmit') node.addEventListener('submit', value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, String(value));
  }
  for (const child of children)
    if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
};

/** Replaces a node's children, skipping the absent ones (replaceChildren would write "null"). */
export const fill = (node, ...children) =>
  node.replaceChildren(...children.filter((c) => c !== null && c !== undefined && c !== false));

export const text = (value) => (value === null || value === undefined || value === '' ? '–' : String(value));

export const age = (seconds) => {
  if (seconds === null || seconds === undefined) return '–';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
};

export const setStatus = (message, kind) => {
  const node = $('status');
  node.textContent = message ?? '';
  node.className = kind ?? '';
};

/** "ledger · now" / "archive (DuckDB …) · 2026-11-25 → 2026-12-01 (7 days)": every figure says both. */
export const provenance = (panel) => {
  const window =
    typeof panel.window === 'string'
      ? panel.window
      : panel.window
        ? `${panel.window.from} → ${panel.window.to} (${panel.window.days} days)`
        : '';
  return `Source: ${panel.source} · window: ${window}${panel.asOf ? ` · as of ${panel.asOf}` : ''}`;
};

/**
 * A table. `sort` ({ key, dir }) and `onSort(key)` make the headers of sortable columns buttons with
 * aria-sort; `caption` names it for screen readers.
 */
export const table = (columns, rows, options = {}) => {
  if (rows.length === 0) return el('p', { class: 'muted', text: options.empty ?? '(none)' });
  const head = el(
    'tr',
    {},
    ...columns.map((c) => {
      const sorted = options.sort && c.sort && options.sort.key === c.sort;
      const th = el('th', {
        scope: 'col',
        ...(c.sort && options.onSort
          ? { 'aria-sort': sorted ? (options.sort.dir === 'asc' ? 'ascending' : 'descending') : 'none' }
          : {}),
      });
      if (c.sort && options.onSort) {
        const arrow = sorted ? (options.sort.dir === 'asc' ? ' ▲' : ' ▼') : '';
        th.append(
          el('button', {
            type: 'button',
            class: 'sort',
            'data-sort': c.sort,
            text: `${c.label}${arrow}`,
            onclick: () => options.onSort(c.sort),
          }),
        );
      } else if (c.srLabel) {
        th.append(el('span', { class: 'sr-only', text: c.srLabel }));
      } else th.textContent = c.label;
      return th;
    }),
  );
  const body = rows.map((row) =>
    el(
      'tr',
      options.rowAttrs ? options.rowAttrs(row) : {},
      ...columns.map((c) => {
        const cell = el('td', c.num ? { class: 'num' } : {});
        const value = c.render ? c.render(row) : row[c.key];
        if (value instanceof Node) cell.append(value);
        else cell.textContent = text(value);
        return cell;
      }),
    ),
  );
  // A wide table scrolls sideways in its own box on a narrow screen: the box is a named region that
  // takes the focus, so the keyboard can scroll it too.
  return el(
    'div',
    { class: 'table-wrap', role: 'region', tabindex: 0, 'aria-label': options.caption ?? 'table' },
    el(
      'table',
      options.attrs ?? {},
      options.caption
        ? el('caption', { class: options.captionVisible ? '' : 'sr-only', text: options.caption })
        : null,
      el('thead', {}, head),
      el('tbody', {}, ...body),
    ),
  );
};

/** Previous / next and the page size for a paged answer ({ page, pages, total, pageSize, truncated }). */
export const pager = (answer, { label, onPage, onPageSize }) => {
  const size = el(
    'select',
    { 'aria-label': `${label}: rows per page`, class: 'page-size' },
    ...[10, 25, 50, 100].map((n) =>
      el('option', { value: n, text: `${n} per page`, selected: n === answer.pageSize }),
    ),
  );
  size.addEventListener('change', () => onPageSize(Number(size.value)));
  return el(
    'nav',
    { class: 'pager', 'aria-label': `${label}: pages` },
    el('button', {
      type: 'button',
      class: 'page-prev',
      text: '‹ Previous',
      disabled: answer.page <= 1,
      onclick: () => onPage(answer.page - 1),
    }),
    el('span', {
      class: 'page-of',
      'aria-live': 'polite',
      text: `page ${answer.page} of ${answer.pages} · ${answer.total} rows${answer.truncated ? ' (first rows only: narrow the filter)' : ''}`,
    }),
    el('button', {
      type: 'button',
      class: 'page-next',
      text: 'Next ›',
      disabled: answer.page >= answer.pages,
      onclick: () => onPage(answer.page + 1),
    }),
    size,
  );
};

/** A labelled field: the label element wraps its control, so the control's accessible name is the label. */
export const field = (label, control) =>
  el('label', { class: 'field' }, el('span', { text: label }), control);
