import * as z from 'zod/mini';
import '../domain/zodLocale.js';

/**
 * What the intake queue carries: a caller's intent (any JSON the intent schema judges), or a resume
 * notice the ledger's sweep publishes for a sealed notification. A resume notice names the notification
 * only; the body stays sealed in the ledger until the dispatcher opens it.
 */
export type QueueMessage = { kind: 'intent' } | { kind: 'resume'; logicalKey: string; resend?: ResendOrder };

/** An operator's resend of one channel of a sealed notification, under a new key. */
export interface ResendOrder {
  dedupeKey: string;
  decisionId: string;
  channel: 'email' | 'sms';
}

export const RESUME_MARKER = 'sendproof.resume/v1';

// Built on the first body that carries the marker: an intent (the common first message) never needs it.
let resumeSchema: ReturnType<typeof buildResumeSchema> | undefined;
const buildResumeSchema = () =>
  z.strictObject({
    type: z.literal(RESUME_MARKER),
    logicalKey: z.string().check(z.minLength(3), z.maxLength(2048)),
    resend: z.optional(
      z.strictObject({
        dedupeKey: z.string().check(z.minLength(3), z.maxLength(2048)),
        decisionId: z.string().check(z.minLength(1), z.maxLength(128)),
        channel: z.enum(['email', 'sms']),
      }),
    ),
  });

export const resumeMessage = (logicalKey: string, resend?: ResendOrder): string =>
  JSON.stringify({ type: RESUME_MARKER, logicalKey, ...(resend ? { resend } : {}) });

export const parseQueueMessage = (body: string): QueueMessage => {
  if (!body.includes(RESUME_MARKER)) return { kind: 'intent' };
  try {
    resumeSchema ??= buildResumeSchema();
    const parsed = resumeSchema.safeParse(JSON.parse(body));
    if (!parsed.success) return { kind: 'intent' };
    const { logicalKey, resend } = parsed.data;
    return { kind: 'resume', logicalKey, ...(resend ? { resend } : {}) };
  } catch {
    return { kind: 'intent' };
  }
};
