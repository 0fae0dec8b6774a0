// One notification's timeline: the ledger's history and the provider's facts in the order the ledger saw
// them, each time in the column of the clock it comes from (a provider's time can read earlier than the
// acceptance it was recorded after: the page says so instead of showing delivery before acceptance),
// the provider ids, the archive's records, and the export bundle.
import { api } from './api.js';
import { $, el, fill, setStatus, table, text } from './dom.js';
import { writeUrl } from './url.js';

const gap = (ms) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(3)} s`);

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

const clockedTable = (entries) =>
  table(
    [
      { label: 'v', key: 'version', num: true },
      {
        label: 'ledger clock',
        render: (e) => (e.clock === 'ledger' ? e.at : e.recordedAfter ? `after ${e.recordedAfter.at}` : ''),
      },
      { label: 'provider clock', render: (e) => (e.clock === 'provider' ? e.at : '') },
      { label: 'what', render: (e) => (e.kind === 'fact' ? `fact: ${e.what}` : e.what) },
      { label: 'by', key: 'by' },
      { label: 'why', key: 'why' },
      {
        label: 'note',
        render: (e) =>
          e.providerEarlierByMs !== null
            ? `${gap(e.providerEarlierByMs)} before the ledger recorded ${e.recordedAfter.what} (two clocks; recorded after it)`
            : '',
      },
    ],
    entries,
    {
      attrs: { 'data-testid': 'timeline-clocked' },
      caption: "Timeline in the order the ledger saw it; each time in its own clock's column",
      rowAttrs: (e) => ({ 'data-clock': e.clock }),
    },
  );

let timelineRequest = 0;
export const showTimeline = async (key) => {
  // Only the latest request may render: an older answer arriving late must not replace a newer one.
  const request = ++timelineRequest;
  writeUrl({ key });
  try {
    const t = await api(`/api/timeline?${new URLSearchParams({ key })}`);
    if (request !== timelineRequest) return;
    const r = t.row;
    fill(
      $('timeline-body'),
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
        { attrs: { 'data-testid': 'timeline-row' }, caption: 'The row now (ledger)' },
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
      el('h3', { text: 'Timeline (both clocks)' }),
      clockedTable(t.clocked),
      el('h3', { text: 'Ledger history' }),
      table(
        [
          { label: 'v', key: 'version', num: true },
          { label: 'at (ledger clock)', key: 'at' },
          { label: 'state', key: 'state' },
          { label: 'by', key: 'by' },
          { label: 'why', key: 'why' },
          { label: 'message id', key: 'msg' },
        ],
        t.history,
        { attrs: { 'data-testid': 'timeline-history' }, caption: "The row's history, on the ledger's clock" },
      ),
      el('h3', { text: 'Provider ids' }),
      el('p', { class: 'key', text: t.providerIds.length ? t.providerIds.join(', ') : 'none recorded' }),
      el('h3', { text: 'Archive records' }),
      t.archive
        ? table(
            [
              { label: 'v', key: 'version', num: true },
              { label: 'clock', key: 'clock' },
              { label: 'at', key: 'transition_at' },
              { label: 'ledger order', key: 'ledger_at' },
              { label: 'from', key: 'from_state' },
              { label: 'to', key: 'to_state' },
              { label: 'actor', key: 'actor' },
              { label: 'reason', key: 'reason' },
              { label: 'message id', key: 'transport_message_id' },
            ],
            t.archive,
            {
              attrs: { 'data-testid': 'timeline-archive' },
              caption: "The archive's records of this notification, in the ledger's order",
              empty: 'not archived yet',
            },
          )
        : el('p', { class: 'muted', text: 'no archive configured' }),
      el('p', { class: 'muted', text: `evidence event ids: ${text(t.evidence.eventIds.join(', '))}` }),
    );
  } catch (error) {
    if (request !== timelineRequest) return;
    $('timeline-body').replaceChildren(el('p', { class: 'bad', text: `timeline: ${error.message}` }));
  }
};

export const initTimeline = () => {
  $('timeline-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = $('t-key').value.trim();
    if (key) showTimeline(key);
  });
};
