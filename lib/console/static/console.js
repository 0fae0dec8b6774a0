// Sendproof operator console. No framework, no innerHTML: every value reaches the page through
// textContent (or an attribute set with setAttribute on an element we created), so a hostile string in
// the ledger (an event id like <img src=x onerror=...>) stays text. The bearer token lives in
// sessionStorage for this tab only and is sent in the Authorization header; there are no cookies.

const $ = (id) => document.getElementById(id);
const state = { apiBase: '', token: '', role: 'viewer', selected: new Set(), list: 'quarantined' };

const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'text') node.textContent = value;
    else if (key === 'onclick') node.addEventListener('click', value);
    else if (key === 'onchange') node.addEventListener('change', value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
};

const text = (value) => (value === null || value === undefined || value === '' ? '–' : String(value));

const age = (seconds) => {
  if (seconds === null || seconds === undefined) return '–';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
};

const table = (columns, rows, options = {}) => {
  if (rows.length === 0) return el('p', { class: 'muted', text: options.empty ?? '(none)' });
  const head = el('tr', {}, ...columns.map((c) => el('th', { text: c.label })));
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
  return el('table', options.attrs ?? {}, el('thead', {}, head), el('tbody', {}, ...body));
};

const setStatus = (message, kind) => {
  const node = $('status');
  node.textContent = message ?? '';
  node.className = kind ?? '';
};

class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

const api = async (path, options = {}) => {
  const response = await fetch(`${state.apiBase}${path}`, {
    method: options.method ?? 'GET',
    headers: {
      authorization: `Bearer ${state.token}`,
      ...(options.body ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body ? { body: JSON.stringify(options.body) } : {}),
    credentials: 'omit',
    cache: 'no-store',
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
};

// ---- sign-in: a token in the URL fragment (local console, or Cognito's hosted UI) ----
const readToken = (config) => {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const fromFragment = fragment.get('token') ?? fragment.get('access_token');
  if (fromFragment) {
    sessionStorage.setItem('sendproof-token', fromFragment);
    history.replaceState(null, '', window.location.pathname);
  }
  const token = sessionStorage.getItem('sendproof-token');
  if (token) return token;
  const signin = $('signin');
  signin.hidden = false;
  if (config.cognito) {
    const url = new URL(`https://${config.cognito.domain}/oauth2/authorize`);
    url.searchParams.set('client_id', config.cognito.clientId);
    url.searchParams.set('response_type', 'token');
    url.searchParams.set('scope', 'openid');
    url.searchParams.set('redirect_uri', `${window.location.origin}/`);
    signin.append(el('a', { href: url.toString(), text: 'Sign in' }));
  } else {
    signin.textContent =
      'Open the console with the URL `sendproof console` printed (it carries the token after #).';
  }
  return '';
};

// ---- overview ----
const renderOverview = (o) => {
  const states = Object.keys(o.stats.byState).sort();
  const cards = el(
    'div',
    { class: 'cards' },
    table(
      [
        { label: 'state', key: 'state' },
        { label: 'rows', key: 'rows', num: true },
        { label: 'oldest', render: (r) => (r.oldest === undefined ? '' : age(r.oldest)), num: true },
      ],
      states.map((s) => ({ state: s, rows: o.stats.byState[s], oldest: o.stats.oldestAgeSeconds[s] })),
      { attrs: { 'data-testid': 'by-state' }, empty: 'no rows yet' },
    ),
    table(
      [
        { label: 'DLQ depth', key: 'dlq', num: true },
        { label: 'duplicate acceptances', key: 'dup', num: true },
        { label: 'settled by a human', key: 'share', num: true },
        { label: 'manual decisions (7 d)', key: 'manual', num: true },
      ],
      [
        {
          dlq: o.dlqDepth,
          dup: o.duplicateAcceptances,
          share: o.manualShare === null ? null : `${Math.round(o.manualShare * 100)} %`,
          manual: o.manualDecisions7d,
        },
      ],
    ),
  );
  const latency = o.latency
    ? table(
        [
          { label: 'channel', key: 'channel' },
          { label: 'purpose', key: 'purpose' },
          { label: 'accepted', key: 'accepted', num: true },
          { label: 'intent → accepted p50 ms', key: 'p50_ms', num: true },
          { label: 'p99 ms', key: 'p99_ms', num: true },
        ],
        o.latency,
        { empty: 'no accepted sends in the last 7 days' },
      )
    : el('p', { class: 'muted', text: 'latency: no archive configured' });
  $('overview-body').replaceChildren(cards, latency, el('p', { class: 'muted', text: `as of ${o.now}` }));
};

// ---- attention lists, multi-select, one decision ----
const attentionQuery = () => {
  const params = new URLSearchParams({ list: $('f-list').value });
  for (const [id, name] of [
    ['f-tenant', 'tenant'],
    ['f-purpose', 'purpose'],
    ['f-channel', 'channel'],
    ['f-age', 'minAgeSeconds'],
  ])
    if ($(id).value.trim()) params.set(name, $(id).value.trim());
  return params.toString();
};

const yesNo = (value) => (value === undefined || value === null ? '?' : value ? 'yes' : 'no');

const renderAttention = (page) => {
  state.selected.clear();
  const operator = state.role === 'operator';
  const columns = [
    ...(operator
      ? [
          {
            label: '',
            render: (row) =>
              el('input', {
                type: 'checkbox',
                'aria-label': `select ${row.dedupeKey}`,
                'data-key': row.dedupeKey,
                onchange: (event) => {
                  if (event.target.checked) state.selected.add(row.dedupeKey);
                  else state.selected.delete(row.dedupeKey);
                  updateDecisionCount();
                },
              }),
          },
        ]
      : []),
    {
      label: 'dedupe key',
      render: (row) =>
        el('button', {
          type: 'button',
          class: 'link key',
          text: row.dedupeKey,
          onclick: () => showTimeline(row.dedupeKey),
        }),
    },
    { label: 'state', key: 'state' },
    { label: 'event', render: (row) => el('span', { class: 'event-id', text: row.eventId }) },
    { label: 'tenant', key: 'tenant' },
    { label: 'purpose', key: 'purpose' },
    { label: 'channel', key: 'channel' },
    { label: 'age', render: (row) => age(row.ageSeconds), num: true },
    { label: 'reason', key: 'reason' },
    { label: 'transport', key: 'transport' },
    { label: 'lookup?', render: (row) => yesNo(row.capability?.lookup) },
    { label: 'replay?', render: (row) => yesNo(row.capability?.replay) },
  ];
  $('attention-body').replaceChildren(
    el('p', { class: 'muted', text: `${page.items.length} ${page.list} rows` }),
    table(columns, page.items, {
      attrs: { 'data-testid': 'attention-table' },
      rowAttrs: (row) => ({ 'data-key': row.dedupeKey, 'data-state': row.state }),
      empty: `no ${page.list} rows`,
    }),
  );
  renderDecisionForm();
};

const updateDecisionCount = () => {
  const count = $('decision-count');
  if (count) count.textContent = `${state.selected.size} selected`;
};

const renderDecisionForm = () => {
  const box = $('decision');
  // Viewers get no decision controls at all (the API refuses them anyway).
  if (state.role !== 'operator') {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  box.hidden = false;
  const outcome = el(
    'select',
    { id: 'd-outcome', 'aria-label': 'decision' },
    el('option', { value: 'accepted', text: 'accepted (it arrived)' }),
    el('option', { value: 'rejected', text: 'rejected (it did not, and will not)' }),
  );
  const reason = el('input', { id: 'd-reason', size: 50, maxlength: 200, 'aria-label': 'reason' });
  const submit = el('button', { type: 'button', id: 'd-submit', text: 'Record decision', onclick: decide });
  box.replaceChildren(
    el(
      'div',
      { class: 'decision-form' },
      el('strong', { id: 'decision-count', text: '0 selected' }),
      el('label', { text: 'Decision ' }, outcome),
      el('label', { text: 'Reason ' }, reason),
      submit,
    ),
    el('p', {
      class: 'muted',
      text: 'One decision and one reason for every selected row; recorded under your signed-in identity. No addresses or phone numbers in the reason.',
    }),
  );
};

const decide = async () => {
  const keys = [...state.selected];
  if (keys.length === 0) return setStatus('select at least one row', 'bad');
  try {
    const result = await api('/api/decisions', {
      method: 'POST',
      body: { keys, outcome: $('d-outcome').value, reason: $('d-reason').value },
    });
    const refused = result.results.filter((r) => !r.ok);
    // Reload first, then say so: once the message shows, the lists and the timeline are current.
    await Promise.all([loadAttention(), loadOverview()]);
    if (keys[0]) await showTimeline(keys[0]);
    setStatus(
      `recorded ${result.recorded} decision(s) as ${result.decidedBy}` +
        (refused.length ? `; refused: ${refused.map((r) => `${r.dedupeKey} (${r.error})`).join(', ')}` : ''),
      refused.length ? 'bad' : 'ok',
    );
  } catch (error) {
    setStatus(`decision refused: ${error.message}`, 'bad');
  }
};

// ---- timeline ----
// The export bundle is fetched with the bearer token (no cookie could carry it) and saved from a Blob.
const downloadBundle = async (path, idempotencyKey) => {
  try {
    const bundle = await api(path);
    const url = URL.createObjectURL(new Blob([JSON.stringify(bundle)], { type: 'application/json' }));
    const link = el('a', { href: url, download: `sendproof-bundle-${idempotencyKey.slice(0, 16)}.json` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    setStatus(
      `export bundle: ${bundle.manifest.transitions} transitions, ${bundle.manifest.objects.length} objects`,
      'ok',
    );
  } catch (error) {
    setStatus(`export bundle: ${error.message}`, 'bad');
  }
};

let timelineRequest = 0;
const showTimeline = async (key) => {
  // Only the latest request may render: an older answer arriving late must not replace a newer one.
  const request = ++timelineRequest;
  try {
    const t = await api(`/api/timeline?${new URLSearchParams({ key })}`);
    if (request !== timelineRequest) return;
    const r = t.row;
    // The input is the operator's: an answer never rewrites it (a late one would undo what was typed).
    $('timeline-body').replaceChildren(
      el('p', {}, el('span', { class: 'key', 'data-testid': 'timeline-key', text: r.dedupeKey })),
      table(
        [
          { label: 'state', key: 'state' },
          { label: 'event', key: 'eventId' },
          { label: 'recipient ref', key: 'recipientRef' },
          { label: 'idempotency key', key: 'idempotencyKey' },
          { label: 'transport', key: 'transport' },
          { label: 'attempts', key: 'attempts', num: true },
          { label: 'version', key: 'version', num: true },
        ],
        [r],
        { attrs: { 'data-testid': 'timeline-row' } },
      ),
      el('h3', { text: 'Ledger history' }),
      table(
        [
          { label: 'v', key: 'version', num: true },
          { label: 'at', key: 'at' },
          { label: 'state', key: 'state' },
          { label: 'by', key: 'by' },
          { label: 'why', key: 'why' },
          { label: 'message id', key: 'msg' },
        ],
        t.history,
        { attrs: { 'data-testid': 'timeline-history' } },
      ),
      t.links.exportBundle
        ? el(
            'p',
            {},
            el('button', {
              type: 'button',
              id: 't-export',
              'data-testid': 'timeline-export',
              text: 'Download export bundle',
              onclick: () => downloadBundle(t.links.exportBundle, r.idempotencyKey),
            }),
            el('span', {
              class: 'muted',
              text: ' timeline, archive objects, digests and public key; check it with sendproof audit verify --bundle FILE',
            }),
          )
        : null,
      el('h3', { text: 'Provider ids' }),
      el('p', { class: 'key', text: t.providerIds.length ? t.providerIds.join(', ') : 'none recorded' }),
      el('h3', { text: 'Evidence' }),
      table(
        [
          { label: 'at', key: 'at' },
          { label: 'state', key: 'state' },
          { label: 'source', key: 'by' },
          { label: 'why', key: 'why' },
        ],
        t.evidence.entries,
        { empty: `no evidence entries (${t.evidence.eventIds.length} provider event ids)` },
      ),
      el('h3', { text: 'Archive records' }),
      t.archive
        ? table(
            [
              { label: 'v', key: 'version', num: true },
              { label: 'at', key: 'transition_at' },
              { label: 'from', key: 'from_state' },
              { label: 'to', key: 'to_state' },
              { label: 'actor', key: 'actor' },
              { label: 'reason', key: 'reason' },
              { label: 'message id', key: 'transport_message_id' },
            ],
            t.archive,
            { attrs: { 'data-testid': 'timeline-archive' }, empty: 'not archived yet' },
          )
        : el('p', { class: 'muted', text: 'no archive configured' }),
    );
  } catch (error) {
    if (request !== timelineRequest) return;
    $('timeline-body').replaceChildren(el('p', { class: 'bad', text: `timeline: ${error.message}` }));
  }
};

// ---- suppressions and named queries ----
const loadSuppressions = async () => {
  try {
    const s = await api('/api/suppressions');
    $('suppressions-body').replaceChildren(
      table(
        [
          { label: 'tenant', key: 'tenant' },
          { label: 'recipient ref', key: 'recipientRef' },
          {
            label: 'channels',
            render: (row) =>
              Object.entries(row.channels)
                .map(([c, why]) => `${c}: ${why}`)
                .join(', '),
          },
        ],
        s.items,
        { empty: 'nobody is suppressed' },
      ),
      ...(state.role === 'operator' ? [suppressForm()] : []),
    );
  } catch (error) {
    $('suppressions-body').replaceChildren(el('p', { class: 'muted', text: error.message }));
  }
};

// Operators only: suppress a recipient by opaque ref (there is no removal yet).
const suppressForm = () => {
  const field = (id, label, size) => el('label', { text: `${label} ` }, el('input', { id, size }));
  const channel = el(
    'select',
    { id: 's-channel', 'aria-label': 'channel' },
    ...['email', 'sms', '*'].map((c) => el('option', { value: c, text: c })),
  );
  const add = async () => {
    try {
      await api('/api/suppressions', {
        method: 'POST',
        body: {
          tenant: $('s-tenant').value.trim(),
          recipientRef: $('s-ref').value.trim(),
          channel: channel.value,
          reason: $('s-reason').value,
        },
      });
      setStatus('suppression recorded', 'ok');
      await loadSuppressions();
    } catch (error) {
      setStatus(`suppression refused: ${error.message}`, 'bad');
    }
  };
  return el(
    'div',
    { class: 'decision-form' },
    field('s-tenant', 'Tenant', 12),
    field('s-ref', 'Recipient ref', 14),
    el('label', { text: 'Channel ' }, channel),
    field('s-reason', 'Reason', 30),
    el('button', { type: 'button', id: 's-add', text: 'Suppress', onclick: add }),
  );
};

// Operators only: cancel by business identity. The operator is the signed-in principal, never a field.
const cancelForm = () => {
  const field = (id, label, size) => el('label', { text: `${label} ` }, el('input', { id, size }));
  const result = el('div', { id: 'cancel-result', 'data-testid': 'cancel-result' });
  const submit = async () => {
    const body = { tenant: $('c-tenant').value.trim() || 'default', eventId: $('c-event').value.trim() };
    const purpose = $('c-purpose').value.trim();
    if (purpose) body.purpose = purpose;
    body.reason = $('c-reason').value;
    try {
      const report = await api('/api/cancel', { method: 'POST', body });
      setStatus(
        `cancel ${report.committed ? 'committed' : 'was already committed'} for ${report.eventId} by ${report.cancelledBy}`,
        'ok',
      );
      result.replaceChildren(
        table(
          [
            { label: 'dedupe key', key: 'dedupeKey' },
            { label: 'channel', key: 'channel' },
            { label: 'result', render: (r) => r.outcome.result },
          ],
          report.rows,
          { empty: 'no row exists yet: every later dispatch of this event reads the cancel and stops' },
        ),
      );
    } catch (error) {
      setStatus(`cancel refused: ${error.message}`, 'bad');
    }
  };
  return el(
    'div',
    { class: 'decision-form' },
    field('c-tenant', 'Tenant', 12),
    field('c-event', 'Event id', 24),
    field('c-purpose', 'Purpose (optional)', 14),
    field('c-reason', 'Reason', 30),
    el('button', { type: 'button', id: 'c-submit', text: 'Cancel notifications', onclick: submit }),
    result,
  );
};

const loadQueries = async () => {
  try {
    const { items } = await api('/api/queries');
    const select = el('select', { id: 'q-name', 'aria-label': 'query' });
    for (const q of items) select.append(el('option', { value: q.name, text: q.name }));
    const params = el('span', { class: 'filters' });
    const describe = () => {
      const q = items.find((i) => i.name === select.value);
      params.replaceChildren(
        ...(q?.parameters ?? []).map((p) =>
          el(
            'label',
            { text: `${p.name} ` },
            el('input', { 'data-param': p.name, title: p.description, size: 14 }),
          ),
        ),
      );
    };
    select.addEventListener('change', describe);
    describe();
    const run = async () => {
      const args = [...params.querySelectorAll('input')].map((i) => i.value);
      try {
        const r = await api('/api/queries/run', { method: 'POST', body: { name: select.value, args } });
        $('queries-body').replaceChildren(
          table(
            r.columns.map((c) => ({
              label: c,
              render: (row) =>
                typeof row[c] === 'object' && row[c] !== null ? JSON.stringify(row[c]) : row[c],
            })),
            r.rows,
            { empty: '(no rows)' },
          ),
        );
      } catch (error) {
        $('queries-body').replaceChildren(el('p', { class: 'bad', text: error.message }));
      }
    };
    $('queries-form').replaceChildren(
      el(
        'div',
        { class: 'filters' },
        select,
        params,
        el('button', { type: 'button', text: 'Run', onclick: run }),
      ),
    );
  } catch (error) {
    $('queries-form').replaceChildren(el('p', { class: 'muted', text: error.message }));
  }
};

// The archive is per tenant: `?tenant=` in the page address picks whose audit figures the overview shows.
const overviewTenant = new URLSearchParams(window.location.search).get('tenant');
const loadOverview = async () =>
  renderOverview(
    await api(
      overviewTenant ? `/api/overview?tenant=${encodeURIComponent(overviewTenant)}` : '/api/overview',
    ),
  );
let attentionRequest = 0;
const loadAttention = async () => {
  const request = ++attentionRequest;
  const page = await api(`/api/attention?${attentionQuery()}`);
  if (request === attentionRequest) renderAttention(page);
};

const loadAll = async () => {
  try {
    await Promise.all([loadOverview(), loadAttention(), loadSuppressions(), loadQueries()]);
  } catch (error) {
    setStatus(error.message, 'bad');
  }
};

const start = async () => {
  const config = await fetch('config.json', { cache: 'no-store' })
    .then((r) => (r.ok ? r.json() : {}))
    .catch(() => ({}));
  state.apiBase = (config.apiBase ?? '').replace(/\/+$/, '');
  state.token = readToken(config);
  if (!state.token) return;
  try {
    const me = await api('/api/me');
    state.role = me.role;
    $('whoami').textContent = `${me.role}: ${me.id}`;
  } catch (error) {
    sessionStorage.removeItem('sendproof-token');
    setStatus(`sign-in failed: ${error.message}`, 'bad');
    return;
  }
  $('app').hidden = false;
  if (state.role === 'operator') {
    $('cancel').hidden = false;
    $('cancel-body').replaceChildren(cancelForm());
  }
  $('f-apply').addEventListener('click', () => loadAttention().catch((e) => setStatus(e.message, 'bad')));
  $('refresh').addEventListener('click', loadAll);
  $('t-show').addEventListener('click', () => {
    const key = $('t-key').value.trim();
    if (key) showTimeline(key);
  });
  await loadAll();
  document.body.setAttribute('data-ready', 'true');
};

start();
