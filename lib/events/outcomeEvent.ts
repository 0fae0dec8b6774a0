import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { IdentifierSchema } from '../domain/identifier.js';
import { ChannelSchema } from '../domain/purposes.js';
import { STATES } from '../domain/states.js';
import { FACTS } from '../evidence/facts.js';
import {
  CALLER_FACTS,
  CALLER_STATES,
  OUTCOME_EVENT_SCHEMA_VERSION,
  OUTCOME_EVENT_SOURCE,
} from './outcomeConstants.js';

// The constants live in outcomeConstants.ts, so the outcomes function (which maps rows to events and never
// parses one) does not build the schema at its cold start; exported here as before.
export { CALLER_FACTS, CALLER_STATES, OUTCOME_EVENT_SCHEMA_VERSION, OUTCOME_EVENT_SOURCE };

const nullable = <T extends z.ZodMiniType>(schema: T) => z.nullable(schema);

/**
 * One outcome event, version 1: what became of one message on one channel. It carries identities,
 * states, times and provider ids only — never an address, a secret, a body or template data (the ledger
 * row it is derived from holds none of them).
 *
 * `id` is stable: the same transition (or fact) always yields the same id, however often the ledger's
 * stream delivers it, so a consumer deduplicates on `id`. It is derived from the same tuple the archive
 * keeps one copy by (dedupe key, version, time, state or fact).
 */
export const OutcomeEventSchemaV1 = z.strictObject({
  schemaVersion: z.literal(OUTCOME_EVENT_SCHEMA_VERSION),
  id: z.string().check(z.regex(/^oe_[a-f0-9]{32}$/)),
  /** `notification.state.<state>` or `notification.fact.<fact>` (also the EventBridge detail-type). */
  type: z.string().check(z.regex(/^notification\.(state|fact)\.[a-z_]+$/)),
  /** `state`: the message moved to `state`; `fact`: a provider reported `fact`, the state did not move. */
  kind: z.enum(['state', 'fact']),
  tenant: IdentifierSchema,
  purpose: z.string().check(z.minLength(1), z.maxLength(48)),
  /** The business event the intent was published for (challenge, order, report). */
  eventId: IdentifierSchema,
  recipientRef: IdentifierSchema,
  channel: ChannelSchema,
  /** The readable dedupe key: one message on one channel (the ledger row). */
  notificationKey: z.string().check(z.minLength(1), z.maxLength(1024)),
  state: z.enum(STATES),
  /** The state it left; null when the row was created in `state`. A fact leaves it unchanged. */
  previousState: nullable(z.enum(STATES)),
  /** The row version this transition produced (a fact: the version it was recorded against). */
  version: z.number().check(z.int(), z.gte(1)),
  /** When it happened, ISO-8601 UTC (a fact: the provider's time). */
  time: z.iso.datetime(),
  fact: nullable(z.enum(FACTS)),
  /** Short machine-readable reason (`gates_passed`, `provider_timeout_after_send`, `ses:Bounce:Permanent/General`). */
  reason: nullable(z.string().check(z.maxLength(512))),
  providerMessageId: nullable(z.string().check(z.maxLength(512))),
  transport: nullable(z.string().check(z.maxLength(64))),
});
export type OutcomeEvent = z.output<typeof OutcomeEventSchemaV1>;

/** Where the generated schema is committed, beside the intent's. */
export const OUTCOME_EVENT_JSON_SCHEMA_FILE = 'schema/outcome-event-v1.json';

export const outcomeEventJsonSchema = (): Record<string, unknown> => ({
  ...z.toJSONSchema(OutcomeEventSchemaV1, { target: 'draft-2020-12' }),
  title: 'Sendproof outcome event, version 1',
  description:
    'What became of one notification on one channel, as the calling service receives it (the EventBridge detail, and the body an HTTPS endpoint gets). Generated from lib/events/outcomeEvent.ts. Deduplicate on id.',
});

export const outcomeEventJsonSchemaText = (): string =>
  `${JSON.stringify(outcomeEventJsonSchema(), null, 2)}\n`;
