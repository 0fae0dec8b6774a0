import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { type Clock, systemClock } from '../domain/clock.js';
import { SendproofError } from '../domain/errors.js';
import { parseOrThrow } from '../domain/parseOrThrow.js';
import { KEY_TAG } from '../transports/labels.js';
import {
  type ActiveFault,
  type FaultSpec,
  type FaultSpecInput,
  FaultSpecSchema,
  faultMatches,
  type RequestFacts,
} from './faults.js';
import { resendWebhookPayload, sendGridWebhookEvent, twilioCallbackParams } from './webhookPayloads.js';
import { type SigningKeys, signResend, signSendGrid, signTwilio } from './webhookSigners.js';

/**
 * TEST DOUBLE. A provider that speaks the generic REST convention (lib/transports/RestTransport.ts),
 * keeps everything in memory and misbehaves on request. It exists for tests, the local stack and
 * reliability drills; it never delivers anything and must never be deployed.
 *
 * Send:   POST /v1/email/send, POST /v1/sms/send   (header Idempotency-Key)
 * Lookup: GET /v1/messages?idempotency_key=K, GET /v1/messages/{id}
 * Admin:  POST /_sim/faults, GET /_sim/faults, GET /_sim/requests, DELETE /_sim, GET /_sim/health
 *
 * Idempotency: within `keyRetentionSeconds` a repeat of the same key and body returns the original id
 * (200, `Idempotent-Replayed: true`); the same key with a different body is a 409
 * `invalid_idempotent_request`; after the window the key is forgotten and the request is a new send.
 */

export type SimOutcome = 'accepted' | 'replayed' | 'rejected' | 'dropped' | 'throttled' | 'error';

export interface SimRequest {
  idempotencyKey: string | null;
  channel: 'email' | 'sms';
  to: string | null;
  outcome: SimOutcome;
  messageId?: string;
  /** ISO 8601, from the simulator's clock. */
  at: string;
}

export interface SimMessage {
  id: string;
  idempotencyKey: string | null;
  channel: 'email' | 'sms';
  to: string;
  status: 'accepted';
  /** ISO 8601, from the simulator's clock. */
  createdAt: string;
  body: Record<string, unknown>;
}

/**
 * One provider event of the pull feed (`GET /v1/events?after=<cursor>`), the generic REST convention's
 * evidence: what happened to an accepted message after the send answered.
 */
export interface SimEvent {
  id: string;
  /** Feed position; `after=<seq>` returns the events after it. */
  seq: number;
  type: 'sent' | 'delivered' | 'bounced' | 'complained' | 'failed' | 'expired' | 'unknown';
  messageId: string;
  idempotencyKey: string | null;
  channel: 'email' | 'sms';
  /** ISO 8601: when it happened. */
  at: string;
  bounceType?: 'Permanent' | 'Transient';
  /** The send's tags, echoed as SES echoes EmailTags (the label is `sendproof-key`). */
  tags?: Record<string, string>;
}

export interface ProviderSimulatorOptions {
  /** 0 (default) lets the kernel pick a free port. */
  port?: number;
  /** Loopback by default; the simulator is never meant to face a network. */
  host?: string;
  /** How long a key is remembered. Default 86400. */
  keyRetentionSeconds?: number;
  clock?: Clock;
  /**
   * Also push each event, when due, as the named provider's signed webhook (Resend or SendGrid for email,
   * Twilio for SMS) to `url` + `/resend` | `/sendgrid` | `/twilio` — what the evidence endpoint receives.
   */
  webhooks?: { url: string; keys: SigningKeys; email: 'resend' | 'sendgrid'; sms?: 'twilio' };
  /**
   * A provider send-rate quota (a token bucket over both channels, as SES's per-second rate or an SMS
   * throughput limit): a send above it is answered 429 with `Retry-After: 1` and nothing is sent.
   */
  rateLimit?: { perSecond: number; burst?: number };
}

export interface RunningProviderSimulator {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Same as `POST /_sim/faults`; throws on an invalid spec. */
  addFault(spec: FaultSpecInput): ActiveFault;
  /** Same as `GET /_sim/requests`. */
  requests(): SimRequest[];
  messages(): SimMessage[];
  /** The pull feed as it stands now (due events only), like `GET /v1/events`. */
  events(): SimEvent[];
  /** Same as `DELETE /_sim`. */
  reset(): void;
}

const EmailSendSchema = z.object({
  to: z.string(),
  subject: z.string(),
  text: z.string(),
  html: z.optional(z.string()),
  attachments: z.optional(
    z.array(
      z.strictObject({
        filename: z.string().check(z.minLength(1)),
        contentType: z.string().check(z.minLength(1)),
        contentBase64: z.string(),
      }),
    ),
  ),
  tags: z.optional(z.record(z.string(), z.string())),
});
const SmsSendSchema = z.object({
  to: z.string(),
  text: z.string(),
  tags: z.optional(z.record(z.string(), z.string())),
});

const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const E164_SHAPE = /^\+[1-9]\d{6,14}$/;
const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Same JSON regardless of key order, so the body hash only changes when the content does. */
const stableJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
};

class BodyTooLarge extends Error {}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) reject(new BodyTooLarge());
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

const sendJson = (
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) => {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const parseJson = (raw: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch {
    return { ok: false };
  }
};

const issuesOf = (error: z.core.$ZodError) =>
  error.issues.map((i) => ({ field: i.path.length ? i.path.join('.') : '(root)', message: i.message }));

export const startProviderSimulator = async (
  options: ProviderSimulatorOptions = {},
): Promise<RunningProviderSimulator> => {
  const clock = options.clock ?? systemClock;
  const retentionMs = (options.keyRetentionSeconds ?? 86_400) * 1000;
  const messages = new Map<string, SimMessage>();
  /** Idempotency key → the message it last produced, with the body hash it was produced from. */
  const keys = new Map<string, { messageId: string; bodyHash: string; atMs: number }>();
  const log: SimRequest[] = [];
  let faults: ActiveFault[] = [];
  /** Events not yet due, in the order they will enter the feed. */
  let pending: Array<Omit<SimEvent, 'seq'> & { dueMs: number }> = [];
  const feed: SimEvent[] = [];
  let eventCounter = 0;
  const dueEvents = () => {
    const now = clock.now();
    const due = pending.filter((e) => e.dueMs <= now);
    pending = pending.filter((e) => e.dueMs > now);
    for (const { dueMs: _d, ...event } of due) feed.push({ ...event, seq: feed.length + 1 });
    return feed;
  };
  /** What happens after acceptance, by the fault that hit the send (none: sent, then delivered). */
  const scheduleEvents = (
    channel: 'email' | 'sms',
    key: string | undefined,
    messageId: string,
    spec: FaultSpec | undefined,
    tags: Record<string, string> | undefined,
  ) => {
    const now = clock.now();
    const later = now + (spec?.deliverAfterMs ?? 0);
    type Step = Pick<SimEvent, 'type' | 'bounceType'> & { dueMs: number };
    const steps: Step[] = [{ type: 'sent', dueMs: now }];
    switch (spec?.fault) {
      case 'bounce':
        steps.push({ type: 'bounced', bounceType: 'Permanent', dueMs: later });
        break;
      case 'soft_bounce':
        steps.push({ type: 'bounced', bounceType: 'Transient', dueMs: later });
        break;
      case 'complaint':
        steps.push({ type: 'delivered', dueMs: later }, { type: 'complained', dueMs: later + 1 });
        break;
      case 'sms_ttl_expired':
        steps.push({ type: 'expired', dueMs: later });
        break;
      case 'carrier_failure':
        steps.push({ type: 'failed', dueMs: later });
        break;
      case 'sms_unknown':
        steps.push({ type: 'unknown', dueMs: later });
        break;
      default:
        steps.push({ type: 'delivered', dueMs: later });
    }
    // Out of order: everything enters the feed at the last step's time, newest first.
    const ordered = spec?.outOfOrder
      ? [...steps].reverse().map((step) => ({ ...step, enterMs: later }))
      : steps.map((step) => ({ ...step, enterMs: step.dueMs }));
    for (const step of ordered) {
      const event = {
        id: `sim_evt_${++eventCounter}`,
        type: step.type,
        messageId,
        idempotencyKey: key ?? null,
        channel,
        at: new Date(step.dueMs).toISOString(),
        ...(step.bounceType ? { bounceType: step.bounceType } : {}),
        ...(tags ? { tags } : {}),
        dueMs: step.enterMs,
      };
      pending.push(event);
      if (spec?.duplicate) pending.push({ ...event });
      push(event, step.enterMs - now, spec?.duplicate ? 2 : 1);
    }
  };

  /**
   * The provider-shaped, signed webhook for one event, built as the provider documents it
   * (lib/simulator/webhookPayloads.ts; only the label and the ids are real).
   */
  const webhookFor = (
    event: Omit<SimEvent, 'seq'>,
  ): { path: string; request: ReturnType<typeof signResend> } | undefined => {
    const hooks = options.webhooks;
    const label = event.tags?.[KEY_TAG];
    if (!hooks || !label) return undefined;
    if (event.channel === 'sms') {
      if (hooks.sms !== 'twilio') return undefined;
      const params = twilioCallbackParams(event);
      if (!params) return undefined;
      const query = `?k=${label}`;
      return {
        path: `/twilio${query}`,
        request: signTwilio(hooks.keys, `${hooks.url}/twilio${query}`, params),
      };
    }
    if (hooks.email === 'resend') {
      const payload = resendWebhookPayload(event);
      if (!payload) return undefined;
      return { path: '/resend', request: signResend(hooks.keys, payload, new Date(), event.id) };
    }
    const sgEvent = sendGridWebhookEvent(event);
    if (!sgEvent) return undefined;
    return { path: '/sendgrid', request: signSendGrid(hooks.keys, [sgEvent]) };
  };

  /** Pushes the event's webhook after `delayMs` (real time), `times` times (duplicates). Failures are dropped, as a provider gives up. */
  const push = (event: Omit<SimEvent, 'seq'>, delayMs: number, times: number) => {
    if (!options.webhooks || !webhookFor(event)) return;
    const base = options.webhooks.url;
    const timer = setTimeout(
      async () => {
        timers.delete(timer);
        // Signed when sent, as the provider does: the timestamp is the delivery attempt's.
        const hook = webhookFor(event);
        if (!hook) return;
        const url = `${base}${hook.path}`;
        for (let i = 0; i < times; i++)
          await fetch(url, { method: 'POST', headers: hook.request.headers, body: hook.request.body }).catch(
            () => undefined,
          );
      },
      Math.max(0, delayMs),
    );
    timers.add(timer);
  };
  const timers = new Set<NodeJS.Timeout>();
  /** Event id → what runs once a reader has asked the feed past that event (answerAfterEventsRead). */
  const feedWaiters = new Map<string, () => void>();
  const readFromFeed = (eventId: string) => {
    const waiter = feedWaiters.get(eventId);
    if (!waiter) return;
    feedWaiters.delete(eventId);
    waiter();
  };

  const iso = () => new Date(clock.now()).toISOString();

  const addFault = (input: unknown): ActiveFault => {
    const spec: FaultSpec = parseOrThrow(FaultSpecSchema, input);
    const fault = { id: randomUUID(), spec, remaining: spec.times };
    faults.push(fault);
    return fault;
  };

  const reset = () => {
    messages.clear();
    keys.clear();
    log.length = 0;
    faults = [];
    pending = [];
    feedWaiters.clear();
    feed.length = 0;
  };

  const takeFault = (facts: RequestFacts): ActiveFault | undefined => {
    const fault = faults.find((f) => faultMatches(f, facts));
    if (fault) fault.remaining -= 1;
    return fault;
  };

  /** Stores (or replays) one valid send. */
  const accept = (
    channel: 'email' | 'sms',
    to: string,
    key: string | undefined,
    body: Record<string, unknown>,
  ): { outcome: 'accepted' | 'replayed'; messageId: string } | { outcome: 'mismatch' } => {
    const now = clock.now();
    const bodyHash = createHash('sha256')
      .update(`${channel}\n${stableJson(body)}`)
      .digest('hex');
    if (key !== undefined) {
      const known = keys.get(key);
      if (known && now - known.atMs < retentionMs) {
        if (known.bodyHash !== bodyHash) return { outcome: 'mismatch' };
        return { outcome: 'replayed', messageId: known.messageId };
      }
    }
    const id = `sim_${randomUUID()}`;
    messages.set(id, {
      id,
      idempotencyKey: key ?? null,
      channel,
      to,
      status: 'accepted',
      createdAt: new Date(now).toISOString(),
      body,
    });
    if (key !== undefined) keys.set(key, { messageId: id, bodyHash, atMs: now });
    return { outcome: 'accepted', messageId: id };
  };

  const bucket = options.rateLimit
    ? { tokens: options.rateLimit.burst ?? options.rateLimit.perSecond, at: clock.now() }
    : undefined;
  /** Takes one send from the quota; false when the provider would throttle this request. */
  const withinRate = (): boolean => {
    if (!bucket || !options.rateLimit) return true;
    const now = clock.now();
    const capacity = options.rateLimit.burst ?? options.rateLimit.perSecond;
    bucket.tokens = Math.min(
      capacity,
      bucket.tokens + ((now - bucket.at) * options.rateLimit.perSecond) / 1000,
    );
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  };

  const handleSend = (channel: 'email' | 'sms', req: IncomingMessage, res: ServerResponse, raw: string) => {
    const header = req.headers['idempotency-key'];
    const key = (Array.isArray(header) ? header[0] : header) || undefined;
    const record = (outcome: SimOutcome, to: string | undefined, messageId?: string) =>
      log.push({
        idempotencyKey: key ?? null,
        channel,
        to: to ?? null,
        outcome,
        ...(messageId ? { messageId } : {}),
        at: iso(),
      });

    const json = parseJson(raw);
    const parsed = json.ok
      ? (channel === 'email' ? EmailSendSchema : SmsSendSchema).safeParse(json.value)
      : undefined;
    if (!parsed?.success) {
      const to =
        json.ok && typeof (json.value as { to?: unknown })?.to === 'string'
          ? (json.value as { to: string }).to
          : undefined;
      record('rejected', to);
      sendJson(res, 400, {
        error: 'invalid_request',
        issues: parsed ? issuesOf(parsed.error) : [{ field: '(root)', message: 'body is not valid JSON' }],
      });
      return;
    }
    const body = parsed.data as Record<string, unknown> & { to: string };
    const to = body.to;
    if (!withinRate()) {
      record('throttled', to);
      sendJson(res, 429, { error: 'rate_limited' }, { 'Retry-After': '1' });
      return;
    }
    const fault = takeFault({ channel, to, idempotencyKey: key });
    switch (fault?.spec.fault) {
      case 'drop_before_accept':
        record('dropped', to);
        res.socket?.destroy();
        return;
      case 'status_429':
        record('throttled', to);
        sendJson(
          res,
          429,
          { error: 'rate_limited' },
          { 'Retry-After': String(fault.spec.retryAfterSeconds ?? 1) },
        );
        return;
      case 'status_500':
        record('error', to);
        sendJson(res, 500, { error: 'internal_error' });
        return;
      case 'reject':
        record('rejected', to);
        sendJson(res, 422, { error: 'invalid_destination' });
        return;
    }
    if (!(channel === 'email' ? EMAIL_SHAPE : E164_SHAPE).test(to)) {
      record('rejected', to);
      sendJson(res, 422, { error: 'invalid_destination' });
      return;
    }
    const result = accept(channel, to, key, body);
    if (result.outcome === 'mismatch') {
      record('rejected', to);
      sendJson(res, 409, {
        error: 'invalid_idempotent_request',
        message: 'this idempotency key was used with a different request body',
      });
      return;
    }
    if (result.outcome === 'accepted')
      scheduleEvents(
        channel,
        key,
        result.messageId,
        fault?.spec,
        body.tags as Record<string, string> | undefined,
      );
    if (fault?.spec.fault === 'accept_then_drop') {
      record('dropped', to, result.messageId);
      res.socket?.destroy();
      return;
    }
    record(result.outcome, to, result.messageId);
    const answer = () =>
      sendJson(
        res,
        200,
        { id: result.messageId, status: 'accepted' },
        result.outcome === 'replayed' ? { 'Idempotent-Replayed': 'true' } : {},
      );
    const hold = fault?.spec.answerAfterEventsRead;
    if (hold && result.outcome === 'accepted') {
      // The answer waits until a reader is past the message's last event in the feed (or for maxMs).
      const last = [...pending].reverse().find((e) => e.messageId === result.messageId);
      let answered = false;
      const once = () => {
        if (answered) return;
        answered = true;
        answer();
      };
      const cap = setTimeout(() => {
        timers.delete(cap);
        once();
      }, hold.maxMs);
      timers.add(cap);
      const held = fault;
      if (last)
        feedWaiters.set(last.id, () => {
          const timer = setTimeout(() => {
            timers.delete(timer);
            if (!answered) held.answeredAfterEventsRead = true;
            once();
          }, hold.afterMs);
          timers.add(timer);
        });
    } else if (fault?.spec.fault === 'delay') {
      const timer = setTimeout(() => {
        timers.delete(timer);
        answer();
      }, fault.spec.delayMs ?? 0);
      timers.add(timer);
    } else answer();
  };

  const view = (m: SimMessage) => ({
    id: m.id,
    idempotencyKey: m.idempotencyKey,
    channel: m.channel,
    status: m.status,
    createdAt: m.createdAt,
  });

  const route = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://simulator.local');
    const method = req.method ?? 'GET';
    let raw = '';
    try {
      raw = await readBody(req);
    } catch (error) {
      if (error instanceof BodyTooLarge) sendJson(res, 413, { error: 'body_too_large' });
      else res.destroy();
      return;
    }
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (method === 'POST' && path === '/v1/email/send') return handleSend('email', req, res, raw);
    if (method === 'POST' && path === '/v1/sms/send') return handleSend('sms', req, res, raw);
    if (method === 'GET' && path === '/v1/messages') {
      const key = url.searchParams.get('idempotency_key');
      if (!key)
        return sendJson(res, 400, { error: 'invalid_request', message: 'idempotency_key is required' });
      const data = [...messages.values()]
        .filter((m) => m.idempotencyKey === key)
        .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
        .map(view);
      return sendJson(res, 200, { data });
    }
    if (method === 'GET' && path === '/v1/events') {
      const after = Number(url.searchParams.get('after') ?? '0');
      const limit = Math.min(500, Math.max(1, Number(url.searchParams.get('limit') ?? '100')));
      if (!Number.isInteger(after) || after < 0)
        return sendJson(res, 400, { error: 'invalid_request', message: 'after must be a feed cursor' });
      const due = dueEvents();
      // A reader asks past an event only once it has recorded the page that held it.
      if (feedWaiters.size > 0) for (const event of due) if (event.seq <= after) readFromFeed(event.id);
      const data = due.filter((e) => e.seq > after).slice(0, limit);
      return sendJson(res, 200, { data, next: String(data.at(-1)?.seq ?? after) });
    }
    const byId = /^\/v1\/messages\/([^/]+)$/.exec(path);
    if (method === 'GET' && byId) {
      const message = messages.get(decodeURIComponent(byId[1]!));
      return message ? sendJson(res, 200, view(message)) : sendJson(res, 404, { error: 'not_found' });
    }
    if (method === 'POST' && path === '/_sim/faults') {
      const json = parseJson(raw);
      if (!json.ok) return sendJson(res, 400, { error: 'invalid_fault', message: 'body is not valid JSON' });
      const parsed = FaultSpecSchema.safeParse(json.value);
      if (!parsed.success)
        return sendJson(res, 400, { error: 'invalid_fault', issues: issuesOf(parsed.error) });
      const fault = addFault(parsed.data);
      return sendJson(res, 201, { id: fault.id, ...fault.spec });
    }
    if (method === 'GET' && path === '/_sim/faults')
      return sendJson(
        res,
        200,
        faults.map((f) => ({ id: f.id, remaining: f.remaining, ...f.spec })),
      );
    if (method === 'GET' && path === '/_sim/requests') return sendJson(res, 200, log);
    if (method === 'DELETE' && path === '/_sim') {
      reset();
      return sendJson(res, 200, { reset: true });
    }
    if (method === 'GET' && path === '/_sim/health') return sendJson(res, 200, { ok: true });
    return sendJson(res, 404, { error: 'not_found', message: `no route for ${method} ${path}` });
  };

  const server = createServer((req, res) => {
    route(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'simulator_failure' });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address !== 'object')
    throw new SendproofError('permanent', 'no_address', 'provider simulator has no address');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    addFault,
    requests: () => log.map((r) => ({ ...r })),
    messages: () => [...messages.values()],
    events: () => dueEvents().map((e) => ({ ...e })),
    reset,
    stop: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
