import { createHash } from 'node:crypto';
import type { DynamoDBRecord } from 'aws-lambda';
import type { ArchiveRecord } from '../archive/schema.js';
import { transitionsOf } from '../archive/transitions.js';
import { IdentifierSchema } from '../domain/identifier.js';
import type { DeliveryState } from '../domain/states.js';
import type { EvidenceFact } from '../evidence/facts.js';
import { CALLER_FACTS, CALLER_STATES, OUTCOME_EVENT_SCHEMA_VERSION } from './outcomeConstants.js';
import type { OutcomeEvent } from './outcomeEvent.js';

const callerStates = new Set<string>(CALLER_STATES);
const callerFacts = new Set<string>(CALLER_FACTS);
const FACT_PREFIX = 'delivery:';

/**
 * The outcome event id: a hash of the tuple the archive keeps one copy of a transition by. A stream
 * batch delivered twice yields the same ids; a row re-created after its TTL has new times, so new ids.
 */
export const outcomeEventId = (
  line: Pick<ArchiveRecord, 'dedupe_key' | 'version' | 'transition_at_ms' | 'to_state'>,
): string =>
  `oe_${createHash('sha256')
    .update(
      `sendproof.outcome/v1\n${line.dedupe_key}\n${line.version}\n${line.transition_at_ms}\n${line.to_state}`,
    )
    .digest('hex')
    .slice(0, 32)}`;

const isIdentifier = (value: string | null): value is string =>
  value !== null && IdentifierSchema.safeParse(value).success;

/**
 * The outcome event of one archived line, when it matters to the calling service: a move into one of
 * CALLER_STATES, or a provider fact of CALLER_FACTS. Annotations (a history entry in the same state),
 * working states and rows without a real tenant, event or recipient (an intent too broken to name one)
 * yield nothing.
 */
export const outcomeEventOf = (line: ArchiveRecord): OutcomeEvent | undefined => {
  const isFact = line.record_kind === 'delivery_fact';
  const fact =
    isFact && line.to_state?.startsWith(FACT_PREFIX) ? line.to_state.slice(FACT_PREFIX.length) : null;
  if (isFact ? fact === null || !callerFacts.has(fact) : !line.to_state || !callerStates.has(line.to_state))
    return undefined;
  if (!isFact && line.from_state === line.to_state) return undefined;
  const { tenant, event_id: eventId, recipient_ref: recipientRef, channel, purpose } = line;
  if (!isIdentifier(tenant) || !isIdentifier(eventId) || !isIdentifier(recipientRef)) return undefined;
  if ((channel !== 'email' && channel !== 'sms') || !purpose || purpose === '-') return undefined;
  if (line.version === null || line.transition_at_ms === null || !line.dedupe_key) return undefined;
  const state = (isFact ? line.from_state : line.to_state) as DeliveryState;
  return {
    schemaVersion: OUTCOME_EVENT_SCHEMA_VERSION,
    id: outcomeEventId(line),
    type: isFact ? `notification.fact.${fact}` : `notification.state.${state}`,
    kind: isFact ? 'fact' : 'state',
    tenant,
    purpose,
    eventId,
    recipientRef,
    channel,
    notificationKey: line.dedupe_key,
    state,
    previousState: line.from_state as DeliveryState | null,
    version: line.version,
    time: new Date(line.transition_at_ms).toISOString(),
    fact: fact as EvidenceFact | null,
    reason: line.reason,
    providerMessageId: line.transport_message_id,
    transport: line.transport,
  };
};

/**
 * The outcome events one ledger stream record yields, in the order they happened: the same derivation
 * the archiver uses (lib/archive/transitions.ts: new history entries by version, new facts by count), so
 * the caller's events and the audit trail can never tell two stories.
 */
export const outcomeEventsOf = (record: DynamoDBRecord): OutcomeEvent[] =>
  transitionsOf(record).flatMap((line) => {
    const event = outcomeEventOf(line);
    return event ? [event] : [];
  });
