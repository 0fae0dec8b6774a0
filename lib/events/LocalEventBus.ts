import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../observability.js';
import type { OutcomeEvent } from './outcomeEvent.js';
import type { OutcomeEventSink } from './port.js';

export interface LocalEventBusOptions {
  /** JSON Lines file every event is appended to (the bus): `sendproof events tail` follows it. */
  logFile: string;
  /** Where undeliverable events are written, with why (the local dead-letter queue). */
  deadLetterFile: string;
  /** Caller endpoints (a tenant's HTTPS endpoint in AWS): each gets every event by POST, JSON body. */
  endpoints?: ReadonlyArray<{ url: string; tenant?: string; headers?: Record<string, string> }>;
  logger: Pick<Logger, 'warn' | 'error'>;
  /** Delivery attempts per endpoint and event (EventBridge retries for up to 24 h; locally, briefly). */
  attempts?: number;
  backoffMs?: number;
  fetch?: typeof fetch;
}

/**
 * The local stack's EventBridge: `publish` appends events to a JSON Lines file (durable before it
 * returns, as PutEvents), then hands each event to every matching endpoint in the background, the way an
 * API destination target does: POST of the event (the `detail`) as JSON, retried on 429, 5xx and network
 * errors, not on any other 4xx (as EventBridge documents for API destinations); an event that cannot be
 * delivered goes to the dead-letter file and the log, never nowhere.
 */
export class LocalEventBus implements OutcomeEventSink {
  private deliveries: Promise<void> = Promise.resolve();
  private readonly fetch: typeof fetch;

  constructor(private readonly options: LocalEventBusOptions) {
    this.fetch = options.fetch ?? fetch;
  }

  async publish(events: readonly OutcomeEvent[]): Promise<{ failedIds: string[] }> {
    if (events.length === 0) return { failedIds: [] };
    await mkdir(dirname(this.options.logFile), { recursive: true });
    await appendFile(this.options.logFile, events.map((e) => `${JSON.stringify(e)}\n`).join(''));
    for (const endpoint of this.options.endpoints ?? []) {
      const mine = events.filter((e) => !endpoint.tenant || e.tenant === endpoint.tenant);
      // One endpoint's events go out in order, one at a time, as the stream delivered them.
      this.deliveries = this.deliveries.then(async () => {
        for (const event of mine) await this.deliver(endpoint, event);
      });
    }
    return { failedIds: [] };
  }

  /** Resolves once every delivery started so far has finished (delivered or dead-lettered). */
  async drain(): Promise<void> {
    await this.deliveries;
  }

  private async deliver(
    endpoint: NonNullable<LocalEventBusOptions['endpoints']>[number],
    event: OutcomeEvent,
  ): Promise<void> {
    const attempts = this.options.attempts ?? 4;
    let last = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        const response = await this.fetch(endpoint.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...endpoint.headers },
          body: JSON.stringify(event),
        });
        await response.arrayBuffer().catch(() => undefined);
        if (response.ok) return;
        last = `HTTP ${response.status}`;
        if (response.status !== 429 && response.status < 500) break;
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
      }
      if (attempt < attempts)
        await new Promise((r) => setTimeout(r, (this.options.backoffMs ?? 200) * 2 ** (attempt - 1)));
    }
    this.options.logger.error('outcome event not delivered; written to the dead-letter file', {
      id: event.id,
      endpoint: endpoint.url,
      error: last,
    });
    await mkdir(dirname(this.options.deadLetterFile), { recursive: true });
    await appendFile(
      this.options.deadLetterFile,
      `${JSON.stringify({ endpoint: endpoint.url, error: last, at: new Date().toISOString(), event })}\n`,
    );
  }
}
