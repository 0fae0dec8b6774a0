// The page's state lives in the URL's query string, so a link can be shared with a colleague: the view,
// the overview's tenant and bucket, each list's filters, sort and page, the search, the timeline's key.
// Pure functions first (unit-tested), then the two that touch window.history.

/** Every state key the page writes, with its default (a default is left out of the URL). */
export const DEFAULTS = {
  view: 'overview',
  tenant: '',
  bucket: 'day',
  list: 'quarantined',
  'a.tenant': '',
  'a.purpose': '',
  'a.channel': '',
  'a.age': '',
  'a.sort': 'age',
  'a.dir': 'desc',
  'a.page': '1',
  'a.size': '25',
  'f.field': 'eventId',
  'f.value': '',
  'f.sort': 'updatedAt',
  'f.dir': 'desc',
  'f.page': '1',
  'f.size': '25',
  key: '',
  's.sort': 'tenant',
  's.dir': 'asc',
  's.page': '1',
  'q.sort': '',
  'q.dir': 'asc',
  'q.page': '1',
};

export const VIEWS = ['overview', 'attention', 'find', 'timeline', 'audit'];

/** The state a query string says, every key present (unknown keys ignored, an unknown view → overview). */
export const parseState = (search) => {
  const params = new URLSearchParams(search);
  const state = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS)) {
    const value = params.get(key);
    if (value !== null) state[key] = value;
  }
  if (!VIEWS.includes(state.view)) state.view = 'overview';
  return state;
};

/** The query string for a state: only what differs from the defaults, in a stable order. */
export const formatState = (state) => {
  const params = new URLSearchParams();
  for (const [key, fallback] of Object.entries(DEFAULTS)) {
    const value = state[key];
    if (value !== undefined && value !== null && String(value) !== fallback) params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
};

/** Clicking a sorted column again flips it; a new column starts ascending (ages: oldest first). */
export const nextSort = (current, dir, key) =>
  current === key
    ? { sort: key, dir: dir === 'asc' ? 'desc' : 'asc' }
    : { sort: key, dir: key === 'age' ? 'desc' : 'asc' };

export const readUrl = () => parseState(window.location.search);

/** Writes a change into the URL; `push` adds a history entry (a new view or timeline), else replaces. */
export const writeUrl = (patch, { push = false } = {}) => {
  const next = { ...readUrl(), ...patch };
  const url = `${window.location.pathname}${formatState(next)}`;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
  return next;
};
