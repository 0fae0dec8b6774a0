// The provider circuits panel (issue 29): each failover channel's providers in order, one card each, with
// the state in words and a symbol (never by colour alone), the reason in words with its raw code, when it
// changed and who changed it. The answer (GET /api/circuits, and the overview's `circuits` panel) comes
// from lib/console/circuitsPanel.ts; this module only lays it out.
import { age, el, table } from './dom.js';

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** `2026-12-02T12:03:04.000Z` → `12:03:04 UTC` (the day is in the full time beside it when it matters). */
export const clockTime = (iso) => (iso ? `${iso.slice(11, 19)} UTC` : '–');

/** The badge text of a circuit: what a dispatcher does with the provider now. */
export const circuitBadge = (c) => {
  if (c.state === 'open') return c.probeDue ? '✕ open: probe due' : `✕ open until ${clockTime(c.openUntil)}`;
  if (c.state === 'half_open')
    return c.probeDue
      ? '◐ half-open: probe lease over'
      : `◐ half-open: probing until ${clockTime(c.probeUntil)}`;
  return '✓ closed';
};

const reasonLine = (reason) =>
  el(
    'p',
    { class: 'circuit-reason' },
    el('span', { text: 'Why: ' }),
    el('span', { 'data-testid': 'circuit-reason', text: reason.text }),
    reason.known ? el('code', { class: 'muted', text: ` (${reason.raw})` }) : null,
  );

const changedLine = (c) =>
  el('p', {
    class: 'muted',
    'data-testid': 'circuit-changed',
    text:
      c.changedAt === undefined
        ? 'Never opened.'
        : `${c.state === 'closed' ? 'Closed' : c.state === 'open' ? 'Opened' : 'Probing'} ${age(c.changedAgeSeconds)} ago (${c.changedAt}).`,
  });

const historyTable = (c) =>
  c.history.length === 0
    ? null
    : el(
        'details',
        {},
        el('summary', { text: c.history.length === 1 ? 'Last change' : `Last ${c.history.length} changes` }),
        table(
          [
            { label: 'at', key: 'at' },
            { label: 'to', key: 'state' },
            { label: 'by', key: 'by' },
            { label: 'why', render: (h) => h.why.text },
          ],
          c.history,
          { caption: `${c.provider}: last state changes, newest first` },
        ),
      );

const circuitItem = (channel, c) =>
  el(
    'li',
    {
      class: `circuit circuit-${c.state}`,
      'data-testid': `circuit-${channel}-${c.provider}`,
      'data-state': c.state,
    },
    el(
      'p',
      { class: 'circuit-head' },
      el('strong', { text: c.provider }),
      el('span', { class: 'muted', text: c.position === 1 ? ' (primary)' : ` (fallback ${c.position - 1})` }),
      ' ',
      el('span', { class: `badge badge-${c.state}`, 'data-testid': 'circuit-state', text: circuitBadge(c) }),
    ),
    c.state === 'closed'
      ? el('p', {
          class: 'muted',
          text: `${plural(c.failures, 'provider failure', 'provider failures')} in the current ${c.windowSeconds} s window.`,
        })
      : null,
    c.reason ? reasonLine(c.reason) : null,
    changedLine(c),
    historyTable(c),
  );

/** "1 provider off: ses (email), open since 12:01:02 UTC", or that every provider takes sends. */
const summary = (channels) => {
  const off = channels.flatMap((ch) =>
    ch.circuits.filter((c) => c.state !== 'closed').map((c) => ({ channel: ch.channel, ...c })),
  );
  if (off.length === 0)
    return el('p', {
      class: 'ok',
      'data-testid': 'circuits-summary',
      text: '✓ Every provider is taking sends.',
    });
  return el('p', {
    class: 'bad',
    'data-testid': 'circuits-summary',
    text: `✕ ${plural(off.length, 'provider', 'providers')} off: ${off
      .map((c) => `${c.provider} (${c.channel}) ${c.state.replace('_', '-')} since ${clockTime(c.changedAt)}`)
      .join('; ')}.`,
  });
};

export const circuitsBody = (p) => {
  if (!p.channels) return null;
  if (p.channels.length === 0)
    return el('p', {
      class: 'muted',
      text: 'No channel fails over to a second provider (SENDPROOF_EMAIL_PROVIDERS / SENDPROOF_SMS_PROVIDERS): there is no circuit.',
    });
  return el(
    'div',
    { 'data-testid': 'circuits' },
    summary(p.channels),
    ...p.channels.map((ch) =>
      el(
        'section',
        { class: 'circuit-channel', 'aria-labelledby': `circuits-${ch.channel}-h` },
        el('h4', {
          id: `circuits-${ch.channel}-h`,
          text: `${ch.channel}: ${ch.providers.join(' → ')}`,
        }),
        el(
          'ol',
          { class: 'circuits', 'aria-label': `${ch.channel} providers in failover order` },
          ...ch.circuits.map((c) => circuitItem(ch.channel, c)),
        ),
      ),
    ),
  );
};
