import { rowLabelOf } from '../../lib/domain/keys.js';

/**
 * What a provider echoes of a message we sent: the key hash and the row label (lib/domain/keys.ts).
 * Tests pass the row to build the event a real provider would send, or a bare hash for an event that
 * names no row (a message sent before labels, or one for another deployment's hash).
 */
export type Echoed = string | { pk: string; idempotencyKey: string };

export const hashOf = (row: Echoed): string => (typeof row === 'string' ? row : row.idempotencyKey);

export const labelOf = (row: Echoed): string | undefined =>
  typeof row === 'string' ? undefined : rowLabelOf(row.pk);

/** SES `mail.tags` (arrays of values). */
export const sesTags = (row: Echoed): Record<string, string[]> => {
  const label = labelOf(row);
  return { 'sendproof-key': [hashOf(row)], ...(label ? { 'sendproof-row': [label] } : {}) };
};

/** SMS `context` (string values). */
export const smsContext = (row: Echoed): Record<string, string> => {
  const label = labelOf(row);
  return { 'sendproof-key': hashOf(row), ...(label ? { 'sendproof-row': label } : {}) };
};
