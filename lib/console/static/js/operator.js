// The operator's controls: a decision on the selected rows, cancel by business event, suppress a
// recipient. A viewer gets none of them (the API refuses them anyway). The operator is always the
// signed-in principal, never a field.
import { api, session } from './api.js';
import { $, el, field, setStatus, table } from './dom.js';

/** The rows selected in the attention list for one decision. */
export const selection = Object.assign(new Set(), {
  changed() {
    const count = $('decision-count');
    if (count) count.textContent = `${selection.size} selected`;
  },
});

let afterDecision = async () => {};

export const decisionControls = (reload) => {
  afterDecision = reload;
  const box = $('decision');
  if (session.role !== 'operator') {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  box.hidden = false;
  if ($('d-submit')) return selection.changed();
  const outcome = el(
    'select',
    { id: 'd-outcome' },
    el('option', { value: 'accepted', text: 'accepted (it arrived)' }),
    el('option', { value: 'rejected', text: 'rejected (it did not, and will not)' }),
  );
  const reason = el('input', { id: 'd-reason', size: 40, maxlength: 200, autocomplete: 'off' });
  box.replaceChildren(
    el(
      'div',
      { class: 'decision-form', role: 'group', 'aria-labelledby': 'decision-count' },
      el('strong', { id: 'decision-count', 'aria-live': 'polite', text: '0 selected' }),
      field('Decision', outcome),
      field('Reason', reason),
      el('button', { type: 'button', id: 'd-submit', text: 'Record decision', onclick: decide }),
    ),
    el('p', {
      class: 'muted',
      text: 'One decision and one reason for every selected row; recorded under your signed-in identity. No addresses or phone numbers in the reason.',
    }),
  );
  selection.changed();
};

const decide = async () => {
  const keys = [...selection];
  if (keys.length === 0) return setStatus('select at least one row', 'bad');
  try {
    const result = await api('/api/decisions', {
      method: 'POST',
      body: { keys, outcome: $('d-outcome').value, reason: $('d-reason').value },
    });
    const refused = result.results.filter((r) => !r.ok);
    // Reload first, then say so: once the message shows, the list is current.
    await afterDecision();
    setStatus(
      `recorded ${result.recorded} decision(s) as ${result.decidedBy}` +
        (refused.length ? `; refused: ${refused.map((r) => `${r.dedupeKey} (${r.error})`).join(', ')}` : ''),
      refused.length ? 'bad' : 'ok',
    );
  } catch (error) {
    setStatus(`decision refused: ${error.message}`, 'bad');
  }
};

const input = (id, size) => el('input', { id, size, autocomplete: 'off' });

/** Cancel by business identity (every not-yet-sent notification of one event). */
export const cancelForm = () => {
  const result = el('div', { id: 'cancel-result', 'data-testid': 'cancel-result' });
  const submit = async (event) => {
    event.preventDefault();
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
          {
            caption: 'What the cancel did to each row',
            empty: 'no row exists yet: every later dispatch of this event reads the cancel and stops',
          },
        ),
      );
    } catch (error) {
      setStatus(`cancel refused: ${error.message}`, 'bad');
    }
  };
  return el(
    'form',
    { class: 'decision-form', onsubmit: submit, 'aria-label': 'Cancel by business event' },
    field('Tenant', input('c-tenant', 12)),
    field('Event id', input('c-event', 24)),
    field('Purpose (optional)', input('c-purpose', 14)),
    field('Reason', input('c-reason', 30)),
    el('button', { type: 'submit', id: 'c-submit', text: 'Cancel notifications' }),
    result,
  );
};

/** Suppress a recipient by opaque ref (there is no removal in the console). */
export const suppressForm = (reload) => {
  const channel = el(
    'select',
    { id: 's-channel' },
    ...['email', 'sms', '*'].map((c) => el('option', { value: c, text: c })),
  );
  const add = async (event) => {
    event.preventDefault();
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
      await reload();
    } catch (error) {
      setStatus(`suppression refused: ${error.message}`, 'bad');
    }
  };
  return el(
    'form',
    { class: 'decision-form', onsubmit: add, 'aria-label': 'Suppress a recipient' },
    field('Tenant', input('s-tenant', 12)),
    field('Recipient ref', input('s-ref', 14)),
    field('Channel', channel),
    field('Reason', input('s-reason', 30)),
    el('button', { type: 'submit', id: 's-add', text: 'Suppress' }),
  );
};
