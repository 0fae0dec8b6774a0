import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import { ArchiveRecordError } from './errors.js';
import { ARCHIVE_SCHEMA_VERSION, type ArchiveRecord } from './schema.js';

/** The stream identity of a TTL deletion: DynamoDB itself removing an expired row. */
export const isTtlDeletion = (record: DynamoDBRecord): boolean =>
  record.eventName === 'REMOVE' &&
  record.userIdentity?.type === 'Service' &&
  record.userIdentity?.principalId === 'dynamodb.amazonaws.com';

type Image = Record<string, unknown>;

const imageOf = (image: { [key: string]: AttributeValue } | undefined): Image | undefined =>
  image ? (unmarshall(image as Record<string, SdkAttributeValue>) as Image) : undefined;

// Copy only values of the expected primitive type; anything else (a map, a list, a set) becomes null,
// so an unexpected attribute shape can never smuggle its contents into the archive.
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const int = (value: unknown): number | null =>
  typeof value === 'number' && Number.isSafeInteger(value) ? value : null;

interface Entry {
  s: string;
  at: number;
  by: string | null;
  why: string | null;
  msg: string | null;
  n: number | null;
  /** The provider the entry names (a dispatching attempt's, a failover's destination). */
  p: string | null;
}

const entryOf = (raw: unknown, pk: string, index: number): Entry => {
  const value = (raw ?? {}) as Record<string, unknown>;
  const s = str(value.s);
  const at = int(value.at);
  if (s === null || at === null)
    throw new ArchiveRecordError(`history[${index}] of ${pk} has no state or no time`);
  return {
    s,
    at,
    by: str(value.by),
    why: str(value.why),
    msg: str(value.msg),
    n: int(value.n),
    p: str(value.p),
  };
};

/** Arrival time of the stream record (seconds in the Lambda event) as epoch ms. */
const arrivalMs = (record: DynamoDBRecord): number | null => {
  const seconds = record.dynamodb?.ApproximateCreationDateTime;
  return typeof seconds === 'number' ? Math.round(seconds * 1000) : null;
};

/**
 * The transitions one stream record adds, as archive lines. Derived from the images by version: the
 * new image's history entries from index `oldVersion` up to `newVersion - 1` are new (history[i] is the
 * transition INTO version i+1), so each transition is archived by exactly one stream record.
 *
 * Returns [] for REMOVE events (TTL or otherwise), for items without history (fallback-flow pointers)
 * and for modifications that did not change the version (lease renewals and the like).
 */
export const transitionsOf = (record: DynamoDBRecord): ArchiveRecord[] => {
  if (record.eventName === 'REMOVE') return [];
  const next = imageOf(record.dynamodb?.NewImage);
  if (!next || !Array.isArray(next.history)) return [];
  const pk = str(next.pk);
  if (pk === null || pk.startsWith('flow#')) return [];
  const version = int(next.version);
  const history = next.history as unknown[];
  if (version === null || history.length !== version)
    throw new ArchiveRecordError(
      `${pk}: version ${String(next.version)} but ${history.length} history entries`,
    );
  const previous = imageOf(record.dynamodb?.OldImage);
  // A row re-created after its TTL deletion arrives as INSERT: everything in it is new.
  const oldVersion = record.eventName === 'INSERT' ? 0 : (int(previous?.version) ?? 0);
  const facts = deliveryFactsOf(record, next, previous, pk, version);
  if (oldVersion >= version) return facts;

  const sequence = record.dynamodb?.SequenceNumber ?? null;
  const providerIdChanged = str(next.providerMessageId) !== str(previous?.providerMessageId);
  const lines: ArchiveRecord[] = [];
  for (let i = oldVersion; i < version; i++) {
    const entry = entryOf(history[i], pk, i);
    const from = i === 0 ? null : entryOf(history[i - 1], pk, i - 1).s;
    const last = i === version - 1;
    lines.push({
      schema_version: ARCHIVE_SCHEMA_VERSION,
      dedupe_key: pk,
      record_kind: str(next.kind),
      event_id: str(next.eventId),
      tenant: str(next.tenant),
      purpose: str(next.purpose),
      channel: str(next.channel),
      recipient_ref: str(next.recipientRef),
      logical_key: str(next.logicalKey),
      from_state: from,
      to_state: entry.s,
      version: i + 1,
      transition_at: new Date(entry.at).toISOString(),
      transition_at_ms: entry.at,
      actor: entry.by,
      reason: entry.why,
      content_hash: str(next.contentHash),
      policy_version: str(next.policyVersion),
      template_id: str(next.templateId),
      template_revision: str(next.templateRevision),
      template_owner: str(next.templateOwner),
      idempotency_key: str(next.idempotencyKey),
      // The provider the transition names (after a failover, rows have had two), else the row's.
      transport: entry.p ?? str(next.transport),
      // The id the transition itself carries; otherwise the row's provider id if this update set it.
      transport_message_id: entry.msg ?? (last && providerIdChanged ? str(next.providerMessageId) : null),
      attempt: entry.n ?? (last ? int(next.attempts) : null),
      resend_of: str(next.resendOf),
      superseded_by: str(next.supersededBy),
      stream_event_id: record.eventID ?? null,
      stream_sequence_number: sequence,
      stream_arrival_at_ms: arrivalMs(record),
      requested_at_ms: int(next.reqAt),
    });
  }
  return [...lines, ...facts];
};

/**
 * Post-acceptance facts (the row's `delivery.h`, counted by `delivery.n`) added by this stream record, as
 * archive lines: `record_kind` `delivery_fact`, `from_state` the row's state, `to_state`
 * `delivery:<fact>` (never a state name, so state queries do not count them), at the provider's time.
 */
const deliveryFactsOf = (
  record: DynamoDBRecord,
  next: Image,
  previous: Image | undefined,
  pk: string,
  version: number,
): ArchiveRecord[] => {
  const delivery = next.delivery as { h?: unknown; n?: unknown } | undefined;
  if (!delivery || !Array.isArray(delivery.h)) return [];
  const total = int(delivery.n) ?? delivery.h.length;
  const before =
    record.eventName === 'INSERT'
      ? 0
      : (int((previous?.delivery as { n?: unknown } | undefined)?.n) ??
        (previous?.delivery as { h?: unknown[] } | undefined)?.h?.length ??
        0);
  const added = Math.min(Math.max(0, total - before), delivery.h.length);
  const lines: ArchiveRecord[] = [];
  for (const raw of delivery.h.slice(delivery.h.length - added)) {
    const value = (raw ?? {}) as Record<string, unknown>;
    const fact = str(value.f);
    const at = int(value.at);
    if (fact === null || at === null)
      throw new ArchiveRecordError(`delivery fact of ${pk} has no fact or no time`);
    lines.push({
      schema_version: ARCHIVE_SCHEMA_VERSION,
      dedupe_key: pk,
      record_kind: 'delivery_fact',
      event_id: str(next.eventId),
      tenant: str(next.tenant),
      purpose: str(next.purpose),
      channel: str(next.channel),
      recipient_ref: str(next.recipientRef),
      logical_key: str(next.logicalKey),
      from_state: str(next.state),
      to_state: `delivery:${fact}`,
      version,
      transition_at: new Date(at).toISOString(),
      transition_at_ms: at,
      actor: str(value.by),
      reason: str(value.why),
      content_hash: str(next.contentHash),
      policy_version: str(next.policyVersion),
      template_id: str(next.templateId),
      template_revision: str(next.templateRevision),
      template_owner: str(next.templateOwner),
      idempotency_key: str(next.idempotencyKey),
      transport: str(next.transport),
      transport_message_id: str(value.msg),
      attempt: null,
      resend_of: str(next.resendOf),
      superseded_by: str(next.supersededBy),
      stream_event_id: record.eventID ?? null,
      stream_sequence_number: record.dynamodb?.SequenceNumber ?? null,
      stream_arrival_at_ms: arrivalMs(record),
      requested_at_ms: int(next.reqAt),
    });
  }
  return lines;
};
