import type { DeliveryRecord } from '../ledger/port.js';
import type { CapabilityLookup } from './ports.js';

const lastWhy = (row: DeliveryRecord): string | undefined => {
  for (let i = row.history.length - 1; i >= 0; i--) if (row.history[i]!.why) return row.history[i]!.why;
  return undefined;
};

/** Seconds a row has been in its state: from `attnAt` (the attention index), else `updatedAt`. */
export const ageSecondsOf = (row: DeliveryRecord, now: number): number => {
  const since = row.attnAt !== undefined && row.state !== 'retry_wait' ? row.attnAt : row.updatedAt;
  return Math.max(0, Math.round((now - since) / 1000));
};

/** One row as every console list shows it: refs and hashes only, never an address or a secret. */
export const rowView = (row: DeliveryRecord, now: number, capabilities: CapabilityLookup) => {
  const caps = capabilities(row.transport, row.channel);
  return {
    dedupeKey: row.pk,
    state: row.state,
    kind: row.kind,
    tenant: row.tenant,
    purpose: row.purpose,
    channel: row.channel,
    eventId: row.eventId,
    recipientRef: row.recipientRef,
    idempotencyKey: row.idempotencyKey,
    transport: row.transport ?? null,
    providerMessageId: row.providerMessageId ?? null,
    attempts: row.attempts,
    version: row.version,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
    ageSeconds: ageSecondsOf(row, now),
    ...(row.state === 'retry_wait' && row.nextAttemptAt !== undefined
      ? { nextAttemptAt: new Date(row.nextAttemptAt).toISOString() }
      : {}),
    reason: lastWhy(row) ?? null,
    capability: caps
      ? {
          lookup: caps.lookupByKey || caps.lookupByProviderId,
          replay: caps.idempotencyKey && now - row.createdAt < caps.keyRetentionSeconds * 1000,
          cancel: caps.cancel,
          pushEvidence: caps.pushEvidence,
        }
      : null,
  };
};

export type RowView = ReturnType<typeof rowView>;

/** The sort keys every row list offers (the page's column headers). */
export const ROW_SORTS = [
  'age',
  'dedupeKey',
  'state',
  'eventId',
  'tenant',
  'purpose',
  'channel',
  'updatedAt',
] as const;
export type RowSort = (typeof ROW_SORTS)[number];

export const rowSortKeys = (now: number): Record<RowSort, (row: DeliveryRecord) => string | number> => ({
  age: (row) => ageSecondsOf(row, now),
  dedupeKey: (row) => row.pk,
  state: (row) => row.state,
  eventId: (row) => row.eventId,
  tenant: (row) => row.tenant,
  purpose: (row) => row.purpose,
  channel: (row) => row.channel,
  updatedAt: (row) => row.updatedAt,
});
