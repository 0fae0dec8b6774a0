// Sendproof operator console: the entry module. It signs in, then shows one view at a time (overview,
// needs attention, find, timeline, audit), the view and every list's state in the URL so a link can be
// shared. The concerns live in ./js/: api (sign-in, calls), dom (elements, tables, pager), url (state),
// chartData + charts (uPlot), overview, lists (attention, find), operator (decisions, cancel,
// suppress), timeline (both clocks, export bundle), audit (named queries, suppressions).
import { api, readToken, session } from './js/api.js';
import { initAudit, loadQueries, loadSuppressions } from './js/audit.js';
import { $, setStatus } from './js/dom.js';
import { initAttentionFilters, initFind, loadAttention, loadSearch } from './js/lists.js';
import { loadOverview } from './js/overview.js';
import { initTimeline, showTimeline } from './js/timeline.js';
import { readUrl, VIEWS, writeUrl } from './js/url.js';

const openTimeline = (key) => {
  $('t-key').value = key;
  show('timeline', { push: true });
  return showTimeline(key);
};

const loaders = {
  overview: () => loadOverview(),
  attention: () => loadAttention(openTimeline),
  find: () => loadSearch(openTimeline),
  timeline: () => {
    const { key } = readUrl();
    if (key) {
      $('t-key').value = key;
      return showTimeline(key);
    }
  },
  audit: () => Promise.all([loadQueries(), loadSuppressions()]),
};

/** Shows one view: its nav button is the current page, its heading gets the focus (keyboard users land there). */
const show = (view, { push = false, focus = true } = {}) => {
  writeUrl({ view }, { push });
  for (const v of VIEWS) {
    $(`view-${v}`).hidden = v !== view;
    const tab = $(`nav-${v}`);
    if (v === view) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  if (focus) $(`${view}-h`).focus();
  document.title = `${$(`${view}-h`).textContent} · Sendproof console`;
};

const load = async (view) => {
  document.body.removeAttribute('data-ready');
  try {
    await loaders[view]();
  } catch (error) {
    setStatus(error.message, 'bad');
  }
  document.body.setAttribute('data-ready', 'true');
};

const start = async () => {
  const config = await fetch('config.json', { cache: 'no-store' })
    .then((r) => (r.ok ? r.json() : {}))
    .catch(() => ({}));
  session.apiBase = (config.apiBase ?? '').replace(/\/+$/, '');
  session.token = readToken(config);
  if (!session.token) return;
  try {
    const me = await api('/api/me');
    session.role = me.role;
    session.id = me.id;
    $('whoami').textContent = `${me.role}: ${me.id}`;
  } catch (error) {
    sessionStorage.removeItem('sendproof-token');
    setStatus(`sign-in failed: ${error.message}`, 'bad');
    return;
  }
  $('app').hidden = false;
  initAttentionFilters(openTimeline);
  initFind(openTimeline);
  initTimeline();
  initAudit();
  for (const view of VIEWS)
    $(`nav-${view}`).addEventListener('click', () => {
      show(view, { push: true });
      load(view);
    });
  $('refresh').addEventListener('click', () => load(readUrl().view));
  window.addEventListener('popstate', () => {
    const { view } = readUrl();
    show(view, { focus: false });
    load(view);
  });
  const { view } = readUrl();
  show(view, { focus: false });
  await load(view);
};

start();
