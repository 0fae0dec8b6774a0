import { parseIntent } from '../domain/intent.js';
import { deriveDedupeKey, identityOf } from '../domain/keys.js';
import { NUMBER_TENANT, numberRefOf } from '../ledger/optOut.js';
import type { GateFacts } from '../ledger/port.js';
import { METRIC } from '../observability.js';
import { deliverChannel } from './driver.js';
import { deliverFallback } from './fallbackFlow.js';
import { isLastReceive, logicalKeyOf, sealFirst, sealPlanOf, unseal } from './parking.js';
import { parseQueueMessage, type ResendOrder } from './queueMessage.js';
import { type DispatchContext, followsFlow, type Job, resolveContext } from './run.js';
import { recordInvalidBody } from './sideRows.js';
import type { DispatcherDeps, IntentOutcome, QueueEnvelope } from './types.js';

export { logicalKeyOf } from './parking.js';
export type {
  ChannelAction,
  ChannelOutcome,
  DispatchEdge,
  DispatcherDeps,
  DispatchLogger,
  EdgeProbe,
  IntentOutcome,
  MetricsSink,
  QueueEnvelope,
} from './types.js';

/** The longest visibility SQS allows. */
const MAX_VISIBILITY_MS = 12 * 3600 * 1000;

type ParsedIntent = Extract<ReturnType<typeof parseIntent>, { ok: true }>;

/**
 * The intents `prefetch` parsed for a batch, by body, kept with the batch's facts (so they live exactly as
 * long as the batch): `handle` takes each once instead of validating the same body a second time. Only
 * successful parses are kept; with `allowExpired` the one clock-dependent check left (an expiry too far
 * ahead) can only turn from failing to passing as time goes on, so a body valid at prefetch is valid at
 * handle and its parse is the same value.
 */
const prefetched = new WeakMap<GateFacts, Map<string, ParsedIntent>>();

const takePrefetched = (facts: GateFacts | undefined, body: string): ParsedIntent | undefined => {
  const parsed = facts && prefetched.get(facts);
  const hit = parsed?.get(body);
  // Taken once: a duplicate body in the same batch parses its own copy.
  if (hit) parsed!.delete(body);
  return hit;
};

/**
 * The dispatcher: from one queue message to provider calls and honest ledger outcomes, as phases in the
 * spirit of Stripe-style idempotency keys (each foreign call in its own phase, each phase ending in at
 * most one conditional write that is also its recovery point). One module per phase:
 *
 *   phases/prepare  the read-only gates before the claim (expiry, suppression, attachments, admission)
 *   phases/claim    conditional put (or the existing row decides: lib/domain/resume.ts)
 *   phases/gates    expiry → suppression → attachment checksums → expiry again → replay window → `dispatching`
 *   phases/confirm  cancellable purposes only: the cancel marker, read strongly consistently after `dispatching`
 *   phases/send     the provider call, same key every time; nothing written
 *   phases/record   the outcome: accepted | provider_scheduled | rejected | unknown | retry_wait
 *   phases/lateAnswer  the row moved while the provider answered
 *   phases/wait     inline back-off, or park: sealed intent + the message comes back at the due time
 *
 * driver.ts runs the step table for one channel; fallbackFlow.ts moves a fallback's pointer between
 * channels; this class takes the queue message apart and decides which of the two runs.
 */
export class Dispatcher {
  private readonly ctx: DispatchContext;

  constructor(deps: DispatcherDeps) {
    this.ctx = resolveContext(deps);
  }

  /** Handles one queue message body. Throws only for infrastructure failures (the message will come back). */
  async handle(rawBody: string, envelope: QueueEnvelope, facts?: GateFacts): Promise<IntentOutcome> {
    const { ctx } = this;
    const message = parseQueueMessage(rawBody);
    let body = rawBody;
    if (message.kind === 'resume') {
      const opened = await unseal(ctx, message.logicalKey);
      if (!opened) return { disposition: 'done', channels: [] };
      body = message.resend ? asResend(opened, message.resend) : opened;
    }
    const parsed =
      (message.kind === 'intent' ? takePrefetched(facts, body) : undefined) ??
      parseIntent(body, { purposes: ctx.purposes, clock: ctx.clock, allowExpired: true });
    if (!parsed.ok) {
      await recordInvalidBody(ctx, body, envelope, parsed.error.issues);
      ctx.metrics?.count(METRIC.intentsInvalid);
      return { disposition: 'done', channels: [], invalid: { issues: parsed.error.issues } };
    }
    const valid = parsed.value;
    const job: Job = {
      valid,
      body,
      logicalKey: logicalKeyOf(valid),
      sealed: false,
      resumed: message.kind === 'resume' && !message.resend,
      ...(facts ? { facts } : {}),
      ...(message.kind === 'intent' && envelope.sentAt !== undefined ? { queueSentAt: envelope.sentAt } : {}),
    };
    const lastReceive = isLastReceive(ctx, envelope);
    const plan = sealPlanOf(ctx, valid, lastReceive);
    if (envelope.sealed) job.sealed = true;
    else if (plan) await sealFirst(ctx, job, plan);
    if (plan && plan.reason !== 'scheduled') {
      const first = valid.intent.channels[0]!;
      await ctx.probe?.('after_seal', {
        dedupeKey: deriveDedupeKey(identityOf(valid.intent, valid.policy, first)).readable,
        channel: first,
      });
    }

    // The fallback pointer rules every intent of a logical notification that has one, whatever the
    // intent's own delivery mode says: at most one channel active. (A flow only ever exists for a purpose
    // that falls back; the read stays for rows written before that rule.)
    const flowExists =
      followsFlow(valid) ||
      (facts?.flowExists(job.logicalKey) ?? (await ctx.ledger.getFlow(job.logicalKey)) !== undefined);
    const channels = flowExists
      ? await deliverFallback(ctx, job)
      : await Promise.all(valid.intent.channels.map((channel) => deliverChannel(ctx, job, channel)));
    const waiting = channels.filter((c) => c.action === 'retry_later');
    if (waiting.length === 0) return { disposition: 'done', channels };
    const now = ctx.clock.now();
    const dueAt = Math.min(...waiting.map((c) => c.dueAt ?? now));
    return {
      disposition: 'retry_later',
      visibleAfterMs: Math.min(Math.max(0, dueAt - now), MAX_VISIBILITY_MS),
      channels,
    };
  }

  /**
   * Reads what the read-only gates of a whole queue batch need, in one strongly consistent BatchGetItem
   * over both tables: each recipient's suppression entry and whether each notification has a fallback
   * flow. Bodies that do not parse are skipped (handle() records them). Without a reader: undefined,
   * and each record reads for itself.
   */
  async prefetch(bodies: readonly string[]): Promise<GateFacts | undefined> {
    const { ctx } = this;
    if (!ctx.gateFacts) return undefined;
    const recipients = new Map<string, { tenant: string; recipientRef: string }>();
    const logicalKeys = new Set<string>();
    const parsedBodies = new Map<string, ParsedIntent>();
    for (const body of bodies) {
      if (parseQueueMessage(body).kind !== 'intent') continue;
      const parsed = parseIntent(body, { purposes: ctx.purposes, clock: ctx.clock, allowExpired: true });
      if (!parsed.ok) continue;
      parsedBodies.set(body, parsed);
      const { intent } = parsed.value;
      recipients.set(`${intent.tenant}:${intent.recipient.ref}`, {
        tenant: intent.tenant,
        recipientRef: intent.recipient.ref,
      });
      // An SMS number's own opt-out entry (lib/ledger/optOut.ts), read in the same request.
      if (intent.recipient.phone) {
        const ref = numberRefOf(intent.recipient.phone, ctx.contentHashKey);
        recipients.set(`${NUMBER_TENANT}:${ref}`, { tenant: NUMBER_TENANT, recipientRef: ref });
      }
      logicalKeys.add(logicalKeyOf(parsed.value));
    }
    if (recipients.size === 0) return undefined;
    const facts = await ctx.gateFacts.read([...recipients.values()], [...logicalKeys]);
    prefetched.set(facts, parsedBodies);
    return facts;
  }

  /**
   * Seals, at the start of a queue batch, the intent of every record on its last receive, before any
   * record is handled: a batch that times out before it reaches such a record has still handed it to
   * the ledger, whose sweep then finds its `claimed`/`dispatching` row (nothing else indexes those).
   * Returns the message ids sealed; `handle` is told through `envelope.sealed`. Never throws: a seal that
   * fails here is tried again by `handle`.
   */
  async sealLastReceives(
    records: ReadonlyArray<{ body: string; envelope: QueueEnvelope }>,
  ): Promise<Set<string>> {
    const { ctx } = this;
    const sealed = new Set<string>();
    await Promise.all(
      records.map(async ({ body, envelope }) => {
        if (!isLastReceive(ctx, envelope) || parseQueueMessage(body).kind !== 'intent') return;
        const parsed = parseIntent(body, { purposes: ctx.purposes, clock: ctx.clock, allowExpired: true });
        if (!parsed.ok) return;
        const valid = parsed.value;
        const plan = sealPlanOf(ctx, valid, true);
        if (!plan) return;
        const job: Job = { valid, body, logicalKey: logicalKeyOf(valid), sealed: false, resumed: false };
        if (await sealFirst(ctx, job, plan, { tolerate: true })) sealed.add(envelope.messageId);
      }),
    );
    return sealed;
  }
}

/**
 * An operator's resend of a sealed notification: the same intent, one channel, linked to the old row by
 * `resendOf` (so its key is new: `…:resend=<decisionId>`). The intent schema validates it as usual.
 */
const asResend = (body: string, order: ResendOrder): string => {
  const raw = JSON.parse(body) as Record<string, unknown>;
  return JSON.stringify({
    ...raw,
    channels: [order.channel],
    delivery: 'all',
    resendOf: { dedupeKey: order.dedupeKey, decisionId: order.decisionId },
  });
};
