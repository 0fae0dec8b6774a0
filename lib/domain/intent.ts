import * as z from 'zod/mini';
import './zodLocale.js';
import type { Clock } from './clock.js';
import { type FieldIssue, IntentValidationError } from './errors.js';
import { IdentifierSchema, KEY_COMPONENT, KEY_COMPONENT_MESSAGE } from './identifier.js';
import {
  type Channel,
  ChannelSchema,
  type PurposePolicy,
  type PurposeRegistry,
  SCHEDULE_HORIZON_DAYS,
} from './purposes.js';

// The key-component rule lives in identifier.ts, so a module that needs only it (the outcome events) does
// not build the intent schema at its cold start; exported here as before.
export { IdentifierSchema, KEY_COMPONENT, KEY_COMPONENT_MESSAGE };

const MAX_INTENT_BYTES = 64 * 1024;
const MAX_DATA_BYTES = 16 * 1024;
const MAX_EXPIRY_MS = 366 * 86_400_000;
const MAX_PUBLISHED_AHEAD_MS = 5 * 60_000;
/** How far ahead an intent may be scheduled unless configured otherwise (`scheduleHorizonMs`). */
export const DEFAULT_SCHEDULE_HORIZON_MS = SCHEDULE_HORIZON_DAYS * 86_400_000;

const JsonValue: z.ZodMiniType<unknown> = z.lazy(() =>
  z.union([
    z.string().check(z.maxLength(4096)),
    z.number(),
    z.boolean(),
    z.null(),
    z.array(JsonValue).check(z.maxLength(200)),
    z.record(z.string().check(z.maxLength(64)), JsonValue),
  ]),
);

export const AttachmentRefSchema = z.strictObject({
  /** Immutable reference (s3://bucket/key?versionId=… or https://…); fetched and verified at dispatch. */
  uri: z
    .string()
    .check(
      z.maxLength(2048),
      z.regex(/^(s3|https?|file):\/\/\S+$/, 'must be an s3://, https:// or file:// reference'),
    ),
  sha256: z.string().check(z.regex(/^[a-f0-9]{64}$/, 'must be 64 lowercase hex characters')),
  filename: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(255),
      z.regex(/^[\p{L}\p{N} ._()+-]+$/u, 'must be letters, digits, spaces and . _ ( ) + - only'),
    ),
  contentType: z
    .string()
    .check(z.regex(/^[a-z]+\/[a-z0-9.+-]+$/i, 'must be a MIME type such as application/pdf')),
});
export type AttachmentRef = z.infer<typeof AttachmentRefSchema>;

export const IntentSchemaV1 = z.strictObject({
  version: z._default(z.literal(1), 1),
  /** The immutable business event: password-reset challenge, order, report. */
  eventId: IdentifierSchema,
  purpose: z.string().check(z.minLength(1), z.maxLength(48), z.regex(KEY_COMPONENT, KEY_COMPONENT_MESSAGE)),
  recipient: z.strictObject({
    /** Opaque reference to the recipient (user id). The only recipient field the ledger keeps. */
    ref: IdentifierSchema,
    email: z.optional(z.email().check(z.maxLength(254))),
    phone: z.optional(
      z.string().check(z.regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 number such as +15555550123')),
    ),
  }),
  channels: z
    .array(ChannelSchema)
    .check(
      z.minLength(1),
      z.maxLength(2),
      z.refine((c) => new Set(c).size === c.length, 'must not repeat a channel'),
    )
    // The refinement has no JSON Schema form of its own; this says the same to schema/intent-v1.json.
    .register(z.globalRegistry, { uniqueItems: true }),
  delivery: z.optional(z.enum(['all', 'fallback'])),
  template: z.strictObject({
    id: IdentifierSchema,
    revision: z
      .string()
      .check(z.regex(/^[A-Za-z0-9._-]{1,32}$/, 'must be 1-32 characters of letters, digits and . _ -')),
  }),
  locale: z.optional(
    z.string().check(z.regex(/^[a-z]{2,3}(-[A-Z][A-Za-z]{1,3})?$/, 'must look like en, pt or pt-BR')),
  ),
  data: z.optional(z.record(z.string().check(z.maxLength(64)), JsonValue)),
  /** Values rendered into the message and never persisted or logged (reset tokens, OTPs). */
  secrets: z.optional(
    z.record(z.string().check(z.maxLength(64)), z.string().check(z.minLength(1), z.maxLength(2048))),
  ),
  expiresAt: z.optional(z.iso.datetime({ offset: true })),
  /**
   * Send no earlier than this. The channels are claimed at once in `scheduled` (so a duplicate publish
   * does nothing), the intent is sealed, and the ledger's sweep dispatches it when due, with every gate
   * evaluated then. Not part of the identity: a second publish with another sendAt is the same message.
   */
  sendAt: z.optional(z.iso.datetime({ offset: true })),
  /**
   * When the caller published the intent; publishIntents() sets it. The service level objectives measure
   * from it (or from sendAt, when later); without it, from the queue's SentTimestamp. Not part of the
   * identity and not rendered: a second publish of the same message with another time is the same message.
   */
  publishedAt: z.optional(z.iso.datetime({ offset: true })),
  attachments: z.optional(z.array(AttachmentRefSchema).check(z.maxLength(5))),
  tenant: z._default(IdentifierSchema, 'default'),
  /** The caller's own id for this intent; informational only, never part of the dedupe key. */
  intentId: z.optional(z.string().check(z.maxLength(128))),
  /** Set only on an operator-approved resend: a new logical message explicitly linked to the old key. */
  resendOf: z.optional(
    z.strictObject({
      dedupeKey: z.string().check(z.minLength(1), z.maxLength(512)),
      decisionId: IdentifierSchema,
    }),
  ),
});

export type Intent = z.output<typeof IntentSchemaV1>;
export type IntentInput = z.input<typeof IntentSchemaV1>;

/** An intent that passed the boundary, with its purpose policy resolved. */
export interface ValidIntent {
  intent: Intent;
  policy: PurposePolicy;
  delivery: 'all' | 'fallback';
  /** Epoch ms, when the intent carries an expiry. */
  expiresAtMs?: number;
  /** Epoch ms, when the intent is scheduled. */
  sendAtMs?: number;
  /** Epoch ms, when the intent says when it was published. */
  publishedAtMs?: number;
}

const fieldOf = (path: readonly PropertyKey[]): string =>
  path.length === 0 ? '(root)' : path.map(String).join('.');

const tooLarge = (value: unknown, limit: number): boolean =>
  Buffer.byteLength(JSON.stringify(value ?? null)) > limit;

/**
 * Validates one intent at the boundary. Accepts the raw SQS body (string) or an already-parsed value.
 * Every rejection names the field and the reason, and never echoes the offending value.
 */
export const parseIntent = (
  raw: unknown,
  deps: {
    purposes: PurposeRegistry;
    clock: Clock;
    /**
     * Publishers refuse an intent that is already expired. The dispatcher accepts it so that the expiry
     * gate records it as `expired` with a reason: a reset that waited too long in the queue is a fact
     * for the audit trail, not a malformed message.
     */
    allowExpired?: boolean;
    /** The furthest a `sendAt` may lie ahead. Default 30 days. */
    scheduleHorizonMs?: number;
  },
): { ok: true; value: ValidIntent } | { ok: false; error: IntentValidationError } => {
  const fail = (issues: FieldIssue[]) => ({ ok: false as const, error: new IntentValidationError(issues) });
  let candidate = raw;
  if (typeof raw === 'string') {
    if (Buffer.byteLength(raw) > MAX_INTENT_BYTES)
      return fail([{ field: '(root)', message: `message is larger than ${MAX_INTENT_BYTES} bytes` }]);
    try {
      candidate = JSON.parse(raw);
    } catch {
      return fail([{ field: '(root)', message: 'body is not valid JSON' }]);
    }
  }
  if (candidate === null || typeof candidate !== 'object' || Array.isArray(candidate))
    return fail([{ field: '(root)', message: 'intent must be a JSON object' }]);

  const parsed = IntentSchemaV1.safeParse(candidate);
  if (!parsed.success) {
    return fail(
      parsed.error.issues.map((issue) => ({
        field: fieldOf(issue.path),
        message: issue.message.slice(0, 200),
      })),
    );
  }
  const intent = parsed.data;
  const issues: FieldIssue[] = [];
  const policy = deps.purposes.find(intent.purpose);
  if (!policy) {
    issues.push({
      field: 'purpose',
      message: `is not a registered purpose (${deps.purposes.names().join(', ')})`,
    });
  }
  if (tooLarge(intent.data, MAX_DATA_BYTES))
    issues.push({ field: 'data', message: `is larger than ${MAX_DATA_BYTES} bytes` });
  for (const channel of intent.channels) {
    if (channel === 'email' && !intent.recipient.email)
      issues.push({ field: 'recipient.email', message: 'is required when channels include email' });
    if (channel === 'sms' && !intent.recipient.phone)
      issues.push({ field: 'recipient.phone', message: 'is required when channels include sms' });
  }
  // The ref becomes part of the dedupe key, the ledger row and the archive: it must not be the address.
  const { ref, email, phone } = intent.recipient;
  if (
    ref.includes('@') ||
    (email !== undefined && ref.toLowerCase() === email.toLowerCase()) ||
    (phone !== undefined && (ref === phone || `+${ref}` === phone))
  ) {
    issues.push({
      field: 'recipient.ref',
      message: 'must be an opaque reference (a user id), never the email address or phone number',
    });
  }
  const delivery = intent.delivery ?? policy?.defaultDelivery ?? 'all';
  // Whether a notification falls back is its purpose's: every intent of a fallback purpose follows one
  // flow, so intents processed at once cannot make two channels active (docs/design.md).
  if (delivery === 'fallback' && policy?.defaultDelivery === 'all')
    issues.push({
      field: 'delivery',
      message: `fallback needs a purpose that falls back (defaultDelivery "fallback"); ${intent.purpose} delivers to every channel`,
    });
  if (delivery === 'fallback' && intent.channels.length < 2)
    issues.push({
      field: 'channels',
      message: 'fallback delivery needs at least two channels, in fallback order',
    });
  let expiresAtMs: number | undefined;
  if (intent.expiresAt) {
    expiresAtMs = Date.parse(intent.expiresAt);
    const now = deps.clock.now();
    if (expiresAtMs <= now && !deps.allowExpired)
      issues.push({ field: 'expiresAt', message: 'is already in the past' });
    else if (expiresAtMs - now > MAX_EXPIRY_MS)
      issues.push({ field: 'expiresAt', message: 'is more than 366 days ahead' });
  } else if (policy?.expiryRequired) {
    issues.push({ field: 'expiresAt', message: `is required for purpose ${intent.purpose}` });
  }
  let sendAtMs: number | undefined;
  if (intent.sendAt) {
    sendAtMs = Date.parse(intent.sendAt);
    const now = deps.clock.now();
    const horizon = deps.scheduleHorizonMs ?? DEFAULT_SCHEDULE_HORIZON_MS;
    // The dispatcher accepts what the publisher refuses (a sendAt that passed while the message waited,
    // or one after the expiry): the gates record what happens to it, at the due time.
    if (!deps.allowExpired) {
      if (sendAtMs <= now) issues.push({ field: 'sendAt', message: 'is not in the future' });
      else if (sendAtMs - now > horizon)
        issues.push({
          field: 'sendAt',
          message: `is more than ${Math.floor(horizon / 86_400_000)} days ahead (the scheduling horizon)`,
        });
      if (expiresAtMs !== undefined && sendAtMs >= expiresAtMs)
        issues.push({ field: 'sendAt', message: 'must be before expiresAt' });
    }
  }
  let publishedAtMs: number | undefined;
  if (intent.publishedAt) {
    publishedAtMs = Date.parse(intent.publishedAt);
    // A publisher's clock may run a little ahead; an intent "published" far in the future is a mistake.
    // The dispatcher accepts it and never lets the SLO clock start after the claim.
    if (!deps.allowExpired && publishedAtMs - deps.clock.now() > MAX_PUBLISHED_AHEAD_MS)
      issues.push({ field: 'publishedAt', message: 'is more than 5 minutes in the future' });
  }
  if (policy && intent.attachments?.length) {
    if (policy.attachments === 'forbidden')
      issues.push({ field: 'attachments', message: `are not allowed for purpose ${intent.purpose}` });
    else if (!intent.channels.includes('email'))
      issues.push({
        field: 'attachments',
        message: 'need the email channel; SMS never carries an attachment',
      });
  }
  if (
    policy?.attachments === 'required-on-email' &&
    intent.channels.includes('email') &&
    !intent.attachments?.length
  )
    issues.push({
      field: 'attachments',
      message: `purpose ${intent.purpose} requires an attachment on email`,
    });
  if (issues.length > 0 || !policy) return fail(issues);
  return {
    ok: true,
    value: {
      intent,
      policy,
      delivery,
      ...(expiresAtMs !== undefined ? { expiresAtMs } : {}),
      ...(sendAtMs !== undefined ? { sendAtMs } : {}),
      ...(publishedAtMs !== undefined ? { publishedAtMs } : {}),
    },
  };
};

/** The channels an intent asks for, in the order the caller gave them (fallback order). */
export const channelsOf = (intent: Intent): Channel[] => [...intent.channels];
