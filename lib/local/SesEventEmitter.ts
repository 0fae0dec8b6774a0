import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { type Clock, systemClock } from '../domain/clock.js';
import { parseOrThrow } from '../domain/parseOrThrow.js';

/**
 * LOCAL ONLY. aws-ses-v2-local records a SendEmail and answers with a MessageId, but emits no
 * configuration-set events, and its store (`GET /store`) drops the EmailTags that carry the key hash.
 * This emitter sits in front of it as a transparent HTTP proxy (the inbox, `/store` and every SES API
 * call pass through unchanged) and, for each SendEmail it answered 200, emits the events real SES would
 * publish to EventBridge (`source: aws.ses`, detail = the configuration-set event) to `deliver` — in the
 * local stack, the real evidence function (functions/evidence).
 *
 * What happens to a message follows the recipient, like SES's mailbox simulator:
 *   success@simulator.amazonses.com         Send, Delivery
 *   bounce@simulator.amazonses.com          Send, Bounce Permanent/General
 *   suppressionlist@simulator.amazonses.com Send, Bounce Permanent/OnAccountSuppressionList
 *   complaint@simulator.amazonses.com       Send, Delivery, Complaint
 *   any other address                       Send, Delivery
 * and labels after `+` inject the faults SES has no address for (combine them):
 *   +transient   a bounce is Transient/General (a soft bounce) instead of Permanent
 *   +after<ms>   the Delivery/Bounce/Complaint comes <ms> after the send (deliver_after_ms)
 *   +dup         every event is delivered twice (same event, as EventBridge's at-least-once delivery)
 *   +ooo         out of order: every event at the last one's time, newest first
 * e.g. `bounce+transient+after2000@simulator.amazonses.com`. `addFault` (or `POST /_sendproof/faults`)
 * does the same for any address.
 *
 *   SDK ──SendEmail──► emitter ──proxy──► aws-ses-v2-local ──200 {MessageId}──► emitter ──► SDK
 *                         └─ +sendDelayMs: Send ─ +deliverAfterMs: Delivery | Bounce (| Complaint) ──► deliver
 */

export const SES_OUTCOMES = ['delivery', 'bounce', 'soft_bounce', 'complaint'] as const;
export type SesOutcome = (typeof SES_OUTCOMES)[number];

export const SesFaultSchema = z.strictObject({
  match: z._default(z.strictObject({ to: z.optional(z.string().check(z.minLength(1))) }), {}),
  outcome: z.enum(SES_OUTCOMES),
  /** How many matching sends it applies to (the first ones). */
  times: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(100_000)), 1),
  deliverAfterMs: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(86_400_000))),
  duplicate: z.optional(z.boolean()),
  outOfOrder: z.optional(z.boolean()),
});
export type SesFault = z.output<typeof SesFaultSchema>;
export type SesFaultInput = z.input<typeof SesFaultSchema>;

/** What one send turns into: the outcome and the faults, from the recipient (or a registered fault). */
export interface SesPlan {
  outcome: SesOutcome;
  bounceSubType?: 'General' | 'OnAccountSuppressionList';
  deliverAfterMs?: number;
  duplicate: boolean;
  outOfOrder: boolean;
}

const SIMULATOR_DOMAIN = 'simulator.amazonses.com';

/** Reads the mailbox-simulator address and its `+labels` (see the module comment). */
export const planFromRecipient = (to: string): SesPlan => {
  const at = to.lastIndexOf('@');
  const local = (at >= 0 ? to.slice(0, at) : to).toLowerCase();
  const domain = at >= 0 ? to.slice(at + 1).toLowerCase() : '';
  const [box = '', ...labels] = local.split('+');
  const after = labels.map((l) => /^after(\d{1,8})$/.exec(l)?.[1]).find((v) => v !== undefined);
  const faults = {
    duplicate: labels.includes('dup'),
    outOfOrder: labels.includes('ooo'),
    ...(after !== undefined ? { deliverAfterMs: Number(after) } : {}),
  };
  if (domain !== SIMULATOR_DOMAIN) return { outcome: 'delivery', ...faults };
  if (box === 'bounce' || box === 'suppressionlist')
    return {
      outcome: labels.includes('transient') ? 'soft_bounce' : 'bounce',
      bounceSubType: box === 'suppressionlist' ? 'OnAccountSuppressionList' : 'General',
      ...faults,
    };
  if (box === 'complaint') return { outcome: 'complaint', ...faults };
  return { outcome: 'delivery', ...faults };
};

/** An SES event as EventBridge delivers it (`detail` is the configuration-set event). */
export interface SesEventBridgeEvent {
  version: '0';
  id: string;
  'detail-type': string;
  source: 'aws.ses';
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: Record<string, unknown> & {
    eventType: string;
    mail: Record<string, unknown> & { messageId: string };
  };
}

export interface SentMail {
  messageId: string;
  from: string;
  to: string[];
  /** The subject (SES echoes it in `mail.headers` and `mail.commonHeaders`). */
  subject?: string;
  /** EmailTags of the SendEmail request, as SES puts them in `mail.tags`. */
  tags: Array<{ Name: string; Value: string }>;
  configurationSet?: string;
  sentAt: number;
}

const DETAIL_TYPES: Readonly<Record<string, string>> = {
  Send: 'Email Sent',
  Delivery: 'Email Delivered',
  Bounce: 'Email Bounced',
  Complaint: 'Email Complaint Received',
};

/**
 * Builds one EventBridge-shaped SES event with the fields SES documents ("Examples of event data that
 * Amazon SES publishes"; test/unit/simulator/fakesHeldToCorpus.test.ts compares each type with the
 * documented example, path by path and type by type). Only the key hash and the row label are read back.
 */
export const sesEvent = (
  mail: SentMail,
  type: 'Send' | 'Delivery' | 'Bounce' | 'Complaint',
  at: number,
  options: { region: string; bounceType?: 'Permanent' | 'Transient'; bounceSubType?: string },
): SesEventBridgeEvent => {
  const account = '000000000000';
  const time = new Date(at).toISOString();
  const tags: Record<string, string[]> = {
    'ses:source-ip': ['127.0.0.1'],
    'ses:from-domain': [mail.from.split('@')[1] ?? 'localhost'],
    'ses:caller-identity': ['sendproof-local'],
    ...(mail.configurationSet ? { 'ses:configuration-set': [mail.configurationSet] } : {}),
  };
  for (const tag of mail.tags) tags[tag.Name] = [...(tags[tag.Name] ?? []), tag.Value];
  const subject = mail.subject ?? '';
  const detail: SesEventBridgeEvent['detail'] = {
    eventType: type,
    mail: {
      timestamp: new Date(mail.sentAt).toISOString(),
      source: mail.from,
      sourceArn: `arn:aws:ses:${options.region}:${account}:identity/${mail.from}`,
      sendingAccountId: account,
      messageId: mail.messageId,
      destination: mail.to,
      headersTruncated: false,
      headers: [
        { name: 'From', value: mail.from },
        { name: 'To', value: mail.to.join(', ') },
        { name: 'Subject', value: subject },
        { name: 'MIME-Version', value: '1.0' },
        { name: 'Content-Type', value: 'multipart/alternative; boundary="sendproof-local"' },
      ],
      commonHeaders: { from: [mail.from], to: mail.to, messageId: mail.messageId, subject },
      tags,
    },
  };
  if (type === 'Send') detail.send = {};
  if (type === 'Delivery')
    detail.delivery = {
      timestamp: time,
      processingTimeMillis: Math.max(0, at - mail.sentAt),
      recipients: mail.to,
      smtpResponse: '250 2.6.0 Message received',
      reportingMTA: 'a8-70.smtp-out.amazonses.com',
    };
  if (type === 'Bounce')
    detail.bounce = {
      bounceType: options.bounceType ?? 'Permanent',
      bounceSubType: options.bounceSubType ?? 'General',
      bouncedRecipients: mail.to.map((emailAddress) => ({
        emailAddress,
        action: 'failed',
        status: options.bounceType === 'Transient' ? '4.4.7' : '5.1.1',
        diagnosticCode:
          options.bounceType === 'Transient' ? 'smtp; 450 4.4.7' : 'smtp; 550 5.1.1 user unknown',
      })),
      timestamp: time,
      feedbackId: `local-${randomUUID()}`,
      reportingMTA: 'dsn; a8-70.smtp-out.amazonses.com',
    };
  if (type === 'Complaint')
    detail.complaint = {
      complainedRecipients: mail.to.map((emailAddress) => ({ emailAddress })),
      timestamp: time,
      feedbackId: `local-${randomUUID()}`,
      userAgent: 'sendproof-local-feedback-loop',
      complaintFeedbackType: 'abuse',
      arrivalDate: time,
    };
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': DETAIL_TYPES[type]!,
    source: 'aws.ses',
    account,
    time,
    region: options.region,
    resources: mail.configurationSet
      ? [`arn:aws:ses:${options.region}:${account}:configuration-set/${mail.configurationSet}`]
      : [],
    detail,
  };
};

/** The events of one send, in the order they are delivered, each with its delay after the send. */
export const eventsFor = (
  mail: SentMail,
  plan: SesPlan,
  timing: { region: string; sendDelayMs: number; deliverAfterMs: number },
): Array<{ delayMs: number; event: SesEventBridgeEvent }> => {
  const later = Math.max(timing.sendDelayMs, plan.deliverAfterMs ?? timing.deliverAfterMs);
  const steps: Array<{ delayMs: number; event: SesEventBridgeEvent }> = [];
  const at = (ms: number) => mail.sentAt + ms;
  const add = (type: 'Send' | 'Delivery' | 'Bounce' | 'Complaint', ms: number, extra = {}) =>
    steps.push({ delayMs: ms, event: sesEvent(mail, type, at(ms), { region: timing.region, ...extra }) });
  add('Send', timing.sendDelayMs);
  if (plan.outcome === 'bounce' || plan.outcome === 'soft_bounce')
    add('Bounce', later, {
      bounceType: plan.outcome === 'bounce' ? 'Permanent' : 'Transient',
      bounceSubType: plan.bounceSubType ?? 'General',
    });
  else add('Delivery', later);
  if (plan.outcome === 'complaint') add('Complaint', later + 1);
  // Out of order: every event at the last one's time, newest first (their timestamps still tell the truth).
  const ordered = plan.outOfOrder
    ? [...steps].reverse().map((s) => ({ ...s, delayMs: steps.at(-1)!.delayMs }))
    : steps;
  return plan.duplicate ? ordered.flatMap((s) => [s, s]) : ordered;
};

const SendEmailRequest = z.object({
  FromEmailAddress: z._default(z.string(), 'unknown@localhost'),
  Destination: z.optional(z.object({ ToAddresses: z._default(z.array(z.string()), []) })),
  EmailTags: z._default(z.array(z.object({ Name: z.string(), Value: z.string() })), []),
  Content: z.optional(
    z.object({ Simple: z.optional(z.object({ Subject: z.optional(z.object({ Data: z.string() })) })) }),
  ),
  ConfigurationSetName: z.optional(z.string()),
});
const SendEmailResponse = z.object({ MessageId: z.string().check(z.minLength(1)) });

/** One emitted event, as `GET /_sendproof/events` lists it (no address). */
export interface EmittedEvent {
  eventType: string;
  messageId: string;
  key?: string;
  at: string;
  deliveredAt: string;
  ok: boolean;
}

export interface SesEventEmitterOptions {
  /** aws-ses-v2-local's URL. */
  upstream: string;
  /** Where each event goes (the local stack: the evidence function's handler). A throw is retried twice. */
  deliver: (event: SesEventBridgeEvent) => Promise<void>;
  port?: number;
  host?: string;
  region?: string;
  clock?: Clock;
  /** Send event after the send answered. Default 100 ms. */
  sendDelayMs?: number;
  /**
   * Delivery/Bounce after the send, unless the recipient says `+after<ms>`. Default 1500 ms: real SES takes
   * seconds, and the ledger records `accepted` in the meantime (evidence for a `dispatching` row is kept
   * for the case the row turns `unknown`, not applied to an accepted one).
   */
  deliverAfterMs?: number;
  onError?: (error: unknown) => void;
  /** Key hash tag whose value the emitted-events log shows. */
  keyTag?: string;
}

export interface RunningSesEventEmitter {
  url: string;
  addFault(spec: SesFaultInput): SesFault;
  /** Events delivered so far (for tests and the demo; no addresses). */
  emitted(): EmittedEvent[];
  /** Resolves once no event is waiting or in flight. */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

const readBody = async (request: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'content-encoding',
]);

export const startSesEventEmitter = async (
  options: SesEventEmitterOptions,
): Promise<RunningSesEventEmitter> => {
  const clock = options.clock ?? systemClock;
  const region = options.region ?? 'us-east-1';
  const keyTag = options.keyTag ?? 'sendproof-key';
  const faults: Array<{ spec: SesFault; remaining: number }> = [];
  const emitted: EmittedEvent[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<Promise<void>>();

  const planFor = (to: string): SesPlan => {
    const fault = faults.find(
      (f) => f.remaining > 0 && (f.spec.match.to === undefined || f.spec.match.to === to),
    );
    if (!fault) return planFromRecipient(to);
    fault.remaining -= 1;
    return {
      outcome: fault.spec.outcome,
      duplicate: fault.spec.duplicate ?? false,
      outOfOrder: fault.spec.outOfOrder ?? false,
      ...(fault.spec.deliverAfterMs !== undefined ? { deliverAfterMs: fault.spec.deliverAfterMs } : {}),
    };
  };

  const deliverOne = async (event: SesEventBridgeEvent) => {
    let ok = false;
    for (let attempt = 0; attempt < 3 && !ok; attempt++) {
      try {
        await options.deliver(event);
        ok = true;
      } catch (error) {
        options.onError?.(error);
        await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
      }
    }
    const mail = event.detail.mail as { messageId: string; tags?: Record<string, string[]> };
    const key = mail.tags?.[keyTag]?.[0];
    emitted.push({
      eventType: event.detail.eventType,
      messageId: mail.messageId,
      ...(key ? { key } : {}),
      at: event.time,
      deliveredAt: new Date(clock.now()).toISOString(),
      ok,
    });
  };

  // One queue per message, so a message's events are delivered in the planned order even when due together.
  const chains = new Map<string, Promise<void>>();
  const schedule = (mail: SentMail, plan: SesPlan) => {
    for (const { delayMs, event } of eventsFor(mail, plan, {
      region,
      sendDelayMs: options.sendDelayMs ?? 100,
      deliverAfterMs: options.deliverAfterMs ?? 1500,
    })) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        const previous = chains.get(mail.messageId) ?? Promise.resolve();
        const run = previous.then(() => deliverOne(event));
        chains.set(mail.messageId, run);
        inFlight.add(run);
        void run.finally(() => inFlight.delete(run));
      }, delayMs);
      timers.add(timer);
    }
  };

  const tap = (requestBody: Buffer, responseBody: Buffer) => {
    const request = SendEmailRequest.safeParse(JSON.parse(requestBody.toString('utf8') || '{}'));
    const response = SendEmailResponse.safeParse(JSON.parse(responseBody.toString('utf8') || '{}'));
    if (!request.success || !response.success) return;
    const to = request.data.Destination?.ToAddresses ?? [];
    const mail: SentMail = {
      messageId: response.data.MessageId,
      from: request.data.FromEmailAddress,
      to,
      ...(request.data.Content?.Simple?.Subject ? { subject: request.data.Content.Simple.Subject.Data } : {}),
      tags: request.data.EmailTags,
      ...(request.data.ConfigurationSetName ? { configurationSet: request.data.ConfigurationSetName } : {}),
      sentAt: clock.now(),
    };
    schedule(mail, planFor(to[0] ?? ''));
  };

  const admin = (request: IncomingMessage, response: ServerResponse, body: Buffer): boolean => {
    const path = (request.url ?? '/').split('?')[0];
    const json = (status: number, value: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (path === '/_sendproof/events' && request.method === 'GET') {
      json(200, emitted);
      return true;
    }
    if (path === '/_sendproof/faults' && request.method === 'POST') {
      let value: unknown;
      try {
        value = JSON.parse(body.toString('utf8'));
      } catch {
        json(400, { error: 'invalid_fault', message: 'body is not valid JSON' });
        return true;
      }
      const parsed = SesFaultSchema.safeParse(value);
      if (!parsed.success) {
        json(400, {
          error: 'invalid_fault',
          issues: parsed.error.issues.map((i) => ({
            field: i.path.join('.') || '(root)',
            message: i.message,
          })),
        });
        return true;
      }
      faults.push({ spec: parsed.data, remaining: parsed.data.times });
      json(201, parsed.data);
      return true;
    }
    return false;
  };

  const server = createServer((request, response) => {
    void (async () => {
      try {
        const body = await readBody(request);
        if (admin(request, response, body)) return;
        const headers = new Headers();
        for (const [name, value] of Object.entries(request.headers))
          if (!HOP_BY_HOP.has(name) && value !== undefined)
            headers.set(name, Array.isArray(value) ? value.join(',') : value);
        const method = request.method ?? 'GET';
        const upstream = await fetch(`${options.upstream}${request.url ?? '/'}`, {
          method,
          headers,
          ...(method === 'GET' || method === 'HEAD' ? {} : { body }),
        });
        const answer = Buffer.from(await upstream.arrayBuffer());
        const out: Record<string, string> = {};
        upstream.headers.forEach((value, name) => {
          if (!HOP_BY_HOP.has(name)) out[name] = value;
        });
        response.writeHead(upstream.status, out).end(answer);
        const path = (request.url ?? '/').split('?')[0];
        if (method === 'POST' && path === '/v2/email/outbound-emails' && upstream.status === 200) {
          try {
            tap(body, answer);
          } catch (error) {
            options.onError?.(error);
          }
        }
      } catch (error) {
        options.onError?.(error);
        if (!response.headersSent) response.writeHead(502, { 'content-type': 'application/json' });
        response.end('{"message":"aws-ses-v2-local did not answer"}');
      }
    })();
  });
  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    addFault: (spec) => {
      const parsed = parseOrThrow(SesFaultSchema, spec);
      faults.push({ spec: parsed, remaining: parsed.times });
      return parsed;
    },
    emitted: () => emitted.map((e) => ({ ...e })),
    idle: async () => {
      while (timers.size > 0 || inFlight.size > 0) {
        await Promise.allSettled([...inFlight]);
        if (timers.size > 0) await new Promise((r) => setTimeout(r, 25));
      }
    },
    stop: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.allSettled([...inFlight]);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
