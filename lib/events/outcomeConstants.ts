import type { STATES } from '../domain/states.js';
import { FACTS } from '../evidence/facts.js';

/** Bumped when the event's shape changes incompatibly; consumers switch on it. */
export const OUTCOME_EVENT_SCHEMA_VERSION = 1;

/** EventBridge `source` of every outcome event. */
export const OUTCOME_EVENT_SOURCE = 'sendproof';

/**
 * The states a calling service is told about. The working states (`claimed`, `dispatching`,
 * `retry_wait`) are the ledger's business: a caller learns where a message went, not how often a worker
 * touched it. `unknown`, `quarantined` and `stalled` are told, because they are where a message waits
 * for evidence or a human.
 */
export const CALLER_STATES = [
  'scheduled',
  'provider_scheduled',
  'accepted',
  'rejected',
  'unknown',
  'quarantined',
  'stalled',
  'expired',
  'suppressed',
  'blocked',
  'invalid',
  'cancelled',
  'resolved_accepted',
  'resolved_rejected',
  'superseded',
] as const satisfies readonly (typeof STATES)[number][];

/** Provider facts a caller is told about: all but `sent`, which only repeats `accepted`. */
export const CALLER_FACTS = FACTS.filter((f) => f !== 'sent');
