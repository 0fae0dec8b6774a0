import { performance } from 'node:perf_hooks';
import type { Channel } from '../lib/domain/purposes.js';
import type { DeliveryState } from '../lib/domain/states.js';
import type { DeliveryRecord, Ledger, SuppressionList, TransitionRequest } from '../lib/ledger/port.js';
import type { OutboundMessage, Transport } from '../lib/transports/port.js';

/**
 * Time spent per notification (keyed by dedupe key) in one port. Decorators below add to it; the
 * dispatcher runs unchanged, so what is timed is exactly what production runs.
 */
export class TimeByKey {
  private readonly byKey = new Map<string, number>();

  add(key: string, ms: number): void {
    this.byKey.set(key, (this.byKey.get(key) ?? 0) + ms);
  }

  get(key: string): number | undefined {
    return this.byKey.get(key);
  }

  keys(): string[] {
    return [...this.byKey.keys()];
  }

  clear(): void {
    this.byKey.clear();
  }
}

const timed = async <T>(sink: TimeByKey, key: string, work: () => Promise<T>): Promise<T> => {
  const start = performance.now();
  try {
    return await work();
  } finally {
    sink.add(key, performance.now() - start);
  }
};

/** The Ledger port with a stopwatch around every call, attributed to the row it touches. */
export class TimedLedger implements Ledger {
  constructor(
    private readonly inner: Ledger,
    private readonly sink: TimeByKey,
  ) {}

  claim(record: DeliveryRecord) {
    return timed(this.sink, record.pk, () => this.inner.claim(record));
  }
  transition(request: TransitionRequest) {
    return timed(this.sink, request.pk, () => this.inner.transition(request));
  }
  get(pk: string, consistent?: boolean) {
    return timed(this.sink, pk, () => this.inner.get(pk, consistent));
  }
  listAttention(state: DeliveryState, options?: { limit?: number; cursor?: string }) {
    return timed(this.sink, `attention#${state}`, () => this.inner.listAttention(state, options));
  }
  findWaitingByIdempotencyKey(idempotencyKey: string, states?: readonly DeliveryState[]) {
    return timed(this.sink, `evidence#${idempotencyKey}`, () =>
      this.inner.findWaitingByIdempotencyKey(idempotencyKey, states),
    );
  }

  openFlow(logicalKey: string, order: Channel[]) {
    return timed(this.sink, `flow#${logicalKey}`, () => this.inner.openFlow(logicalKey, order));
  }
  advanceFlow(logicalKey: string, fromIndex: number, expectedVersion: number) {
    return timed(this.sink, `flow#${logicalKey}`, () =>
      this.inner.advanceFlow(logicalKey, fromIndex, expectedVersion),
    );
  }
  getFlow(logicalKey: string) {
    return timed(this.sink, `flow#${logicalKey}`, () => this.inner.getFlow(logicalKey));
  }
  park(seal: Parameters<Ledger['park']>[0]) {
    return timed(this.sink, `seal#${seal.logicalKey}`, () => this.inner.park(seal));
  }
  rearm(logicalKey: string, dueAt: number, reason: string, resumed?: boolean) {
    return timed(this.sink, `seal#${logicalKey}`, () => this.inner.rearm(logicalKey, dueAt, reason, resumed));
  }
  getSeal(logicalKey: string) {
    return timed(this.sink, `seal#${logicalKey}`, () => this.inner.getSeal(logicalKey));
  }
  release(logicalKey: string) {
    return timed(this.sink, `seal#${logicalKey}`, () => this.inner.release(logicalKey));
  }
  listDue(now: number, options?: { limit?: number; cursor?: string }) {
    return timed(this.sink, 'seal#due', () => this.inner.listDue(now, options));
  }
  commitCancel(...args: Parameters<Ledger['commitCancel']>) {
    return timed(this.sink, `cancel#${args[1]}`, () => this.inner.commitCancel(...args));
  }
  getCancelMarker(tenant: string, eventId: string) {
    return timed(this.sink, `cancel#${eventId}`, () => this.inner.getCancelMarker(tenant, eventId));
  }
  annotate(request: Parameters<Ledger['annotate']>[0]) {
    return timed(this.sink, request.pk, () => this.inner.annotate(request));
  }
}

/** The Transport port with a stopwatch around send and lookup, attributed to the message's dedupe key. */
export const timedTransport = (inner: Transport, sink: TimeByKey): Transport => ({
  name: inner.name,
  channel: inner.channel,
  capabilities: inner.capabilities,
  send: (message: OutboundMessage, idempotencyKey: string) =>
    timed(sink, message.dedupeKey, () => inner.send(message, idempotencyKey)),
  ...(inner.lookup
    ? {
        lookup: (idempotencyKey: string, providerMessageId?: string) =>
          timed(sink, `lookup#${idempotencyKey}`, () => inner.lookup!(idempotencyKey, providerMessageId)),
      }
    : {}),
});

/** The SuppressionList port timed per recipient check (one per provider attempt). */
export const timedSuppressions = (
  inner: SuppressionList,
  sink: TimeByKey,
  keyOf: (recipientRef: string, channel: Channel) => string,
): SuppressionList => ({
  isSuppressed: (tenant, recipientRef, channel) =>
    timed(sink, keyOf(recipientRef, channel), () => inner.isSuppressed(tenant, recipientRef, channel)),
  suppress: (tenant, recipientRef, channel, reason) => inner.suppress(tenant, recipientRef, channel, reason),
});
