import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import { SendproofError } from '../domain/errors.js';
import { lazySchema } from '../domain/lazySchema.js';
import type { RunLogger as ReconcileLogger, MetricsSink as ReconcileMetricsSink } from '../observability.js';
import { type ExchangeTimeouts, lookupGet } from '../transports/HttpExchange.js';
import { KEY_TAG } from '../transports/labels.js';
import type { EvidenceStore } from './DynamoEvidenceStore.js';
import type { EvidenceResult } from './EvidenceRecorder.js';
import { evidence, LABEL_SHAPE, type ParsedEvent, type ProviderEvidence, timeOf } from './events.js';
import type { EvidenceFact } from './facts.js';

/** One page of a provider's event feed. */
export interface EventPage {
  events: ParsedEvent[];
  /** The cursor after this page (unchanged when the page is empty). */
  next: string;
}

export type EventFeed = (after: string | undefined) => Promise<EventPage>;

// --- the generic REST convention: GET {base}/v1/events?after=<cursor> ---------------------------------

// Built on the first pull (lib/domain/lazySchema.ts): the evidence and webhook functions load this module
// with lib/evidenceWiring.ts and never pull; only the reconcile run does.
const restEventSchema = lazySchema('restEvent', () =>
  z.object({
    id: z.string().check(z.minLength(1)),
    type: z.string(),
    messageId: z.string().check(z.minLength(1)),
    idempotencyKey: z.optional(z.nullable(z.string())),
    /** The send's tags, echoed (the convention): the label is `sendproof-key`. */
    tags: z.optional(z.record(z.string(), z.string())),
    channel: z.enum(['email', 'sms']),
    at: z.optional(z.string()),
    bounceType: z.optional(z.string()),
  }),
);
const restPageSchema = lazySchema('restPage', () =>
  z.object({ data: z.array(z.unknown()), next: z.string() }),
);

const restFact = (type: string, channel: 'email' | 'sms', bounceType?: string): EvidenceFact | undefined => {
  switch (type) {
    case 'sent':
      return 'sent';
    case 'delivered':
      return 'delivered';
    case 'delayed':
      return 'delayed';
    case 'bounced':
      return bounceType === 'Permanent' ? 'bounced_permanent' : 'bounced_transient';
    case 'complained':
      return 'complained';
    case 'failed':
      return channel === 'sms' ? 'carrier_failed' : 'rejected';
    case 'expired':
      return 'ttl_expired';
    case 'unknown':
      return 'unknown_final';
    default:
      return undefined;
  }
};

export const parseRestEvent = (value: unknown): ParsedEvent => {
  const parsed = restEventSchema().safeParse(value);
  if (!parsed.success) return { kind: 'ignored', source: 'rest', reason: 'unreadable_rest_event' };
  const e = parsed.data;
  const label = e.tags?.[KEY_TAG];
  if (!label || !LABEL_SHAPE.test(label))
    return { kind: 'ignored', source: 'rest', reason: 'no_sendproof_key' };
  const fact = restFact(e.type, e.channel, e.bounceType);
  if (!fact) return { kind: 'ignored', source: 'rest', reason: `rest_event_not_evidence:${e.type}` };
  const at = timeOf(e.at);
  return evidence({
    source: 'rest',
    evidenceId: `rest:${e.id}`,
    label,
    fact,
    providerMessageId: e.messageId,
    why: `rest:${e.type}${e.bounceType ? `:${e.bounceType}` : ''}`,
    ...(at !== undefined ? { at } : {}),
  });
};

/** The REST provider's feed over HTTP (the simulator serves the same convention). */
export const restEventFeed =
  (options: {
    baseUrl: string;
    apiKey?: () => Promise<string | undefined>;
    limit?: number;
    timeouts?: ExchangeTimeouts;
  }): EventFeed =>
  async (after) => {
    const key = await options.apiKey?.();
    const query = new URLSearchParams({ limit: String(options.limit ?? 100), ...(after ? { after } : {}) });
    const got = await lookupGet(
      `${options.baseUrl.replace(/\/+$/, '')}/v1/events?${query}`,
      key ? { authorization: `Bearer ${key}` } : {},
      options.timeouts,
    );
    if (got.kind !== 'ok')
      throw new SendproofError(
        'retryable',
        'event_feed_unavailable',
        `event feed unavailable: ${got.kind === 'unavailable' ? got.reason : 'not_found'}`,
      );
    const page = restPageSchema().safeParse(got.json);
    if (!page.success)
      throw new SendproofError('retryable', 'event_feed_unreadable', 'event feed page unreadable', {
        cause: page.error,
      });
    return { events: page.data.data.map(parseRestEvent), next: page.data.next };
  };

export interface PullEvidenceDeps {
  /** Feed name: the cursor item is `cursor#<name>` in the ledger table. */
  name: string;
  feed: EventFeed;
  store: Pick<EvidenceStore, 'getCursor' | 'putCursor'>;
  recorder: { record(evidence: ProviderEvidence): Promise<EvidenceResult> };
  now: () => number;
  /** Pages per poll (default 20): one reconcile run never spends its whole timeout here. */
  maxPages?: number;
  logger?: ReconcileLogger;
  metrics?: ReconcileMetricsSink;
}

export interface PullResult {
  pages: number;
  events: number;
  results: Record<string, number>;
  cursor?: string;
  /** Another poller moved the cursor first; this one stopped (its events were recorded idempotently). */
  overtaken: boolean;
}

/**
 * Pull evidence: reads a provider's event feed from a durable cursor, records every event (the same
 * recorder as pushed events, so a duplicate or an out-of-order event changes a row once), and moves the
 * cursor only after its page is recorded. A crash mid-page re-reads the page; the event ids make that
 * harmless. Crash reconciliation therefore never depends on a webhook reaching us.
 */
export class PullEvidence {
  constructor(private readonly deps: PullEvidenceDeps) {}

  async poll(): Promise<PullResult> {
    const results: Record<string, number> = {};
    let { cursor, version } = await this.deps.store.getCursor(this.deps.name);
    let pages = 0;
    let events = 0;
    for (; pages < (this.deps.maxPages ?? 20); ) {
      const page = await this.deps.feed(cursor);
      pages += 1;
      for (const parsed of page.events) {
        events += 1;
        const kind =
          parsed.kind === 'ignored'
            ? `ignored:${parsed.reason}`
            : (await this.deps.recorder.record(parsed.evidence)).kind;
        results[kind] = (results[kind] ?? 0) + 1;
      }
      if (page.events.length === 0 || page.next === cursor) break;
      const moved = await this.deps.store.putCursor(this.deps.name, page.next, version, this.deps.now());
      if (!moved) {
        this.deps.logger?.warn('event feed cursor moved by another poller', { feed: this.deps.name });
        return { pages, events, results, ...(cursor ? { cursor } : {}), overtaken: true };
      }
      cursor = page.next;
      version += 1;
    }
    this.deps.logger?.info('event feed polled', { feed: this.deps.name, pages, events, results });
    return { pages, events, results, ...(cursor ? { cursor } : {}), overtaken: false };
  }
}
