import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { HoldReason, TransportHold } from '../transports/port.js';

/** A transport's hold item in the ledger table (next to the pace slots and the spend breakers). */
export const HOLD_PREFIX = 'hold#';
export const holdKey = (transport: string): string => `${HOLD_PREFIX}${transport}`;

export const HOLD_METRIC = {
  /** A hold answer opened a transport-wide hold (alarmed). */
  started: 'TransportHoldStarted',
  /** A probe's send was accepted: the hold is lifted. */
  lifted: 'TransportHoldLifted',
  /** A row made to wait by a hold (the hold answer itself, or the gate while the hold stands). */
  rows: 'TransportHoldRows',
} as const;

/**
 * How long the other rows wait while one row probes a held transport: if the probe's process dies,
 * another row probes after this.
 */
export const PROBE_TIMEOUT_MS = 60_000;

/** A transport's hold as stored (and as `sendproof stats` and the console show it). */
export interface HoldView {
  transport: string;
  holdState: 'held' | 'lifted';
  reason: HoldReason;
  /** When this hold began (epoch ms). */
  since: number;
  /** When the provider said the state ends (a Retry-After), if it did. */
  until?: number;
  /** Before this, no row calls the provider; at it, one row probes (epoch ms). */
  probeAt: number;
  /** The worker that set or last extended it, and the provider's answer. */
  by: string;
  why: string;
  version: number;
}

/** What the gate does with a transport: send, send as the one probe of a held transport, or wait. */
export type HoldVerdict =
  | { kind: 'go' }
  | { kind: 'probe'; reason: HoldReason }
  | { kind: 'wait'; until: number; reason: HoldReason };

interface HoldItem extends HoldView {
  pk: string;
  kind: 'transport_hold';
  history: Array<{ s: string; at: number; by: string; why: string }>;
}

/**
 * The transport-wide hold (issue 25): an account-level answer (SES sending paused or its daily quota,
 * an SMS spend limit, a provider's temporary block) is about every row of the transport, so it is
 * written once to a shared item, and every other row of that transport waits in the ledger
 * (`retry_wait`, `transport_hold:<reason>`, owned by the sweep) without calling the provider: until the
 * provider's `until`, or, when it named none, until a probe — one row, chosen by a conditional write,
 * asks again at `probeAt`. A probe that is accepted lifts the hold; one answered with the hold again
 * extends it. Nothing is rejected and no fallback is taken: a hold is not an outcome.
 *
 * The gate's read of a transport that was not held is cached for `refreshMs` per process (a row that
 * misses a fresh hold only gets the same hold answer itself); a held answer is always read again
 * strongly consistently before a row waits or probes.
 */
export class TransportHolds {
  private readonly clear = new Map<string, number>();

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly deps: {
      workerId: string;
      refreshMs?: number;
      metrics?: { count(name: string, value?: number): void };
      logger?: { warn(message: string, ...extra: Array<Record<string, unknown>>): void };
    },
  ) {}

  /** Before a provider call: may this row send now? */
  async check(transport: string, now: number): Promise<HoldVerdict> {
    const clearUntil = this.clear.get(transport);
    if (clearUntil !== undefined && now < clearUntil) return { kind: 'go' };
    const item = await this.read(transport);
    if (item?.holdState !== 'held') {
      this.clear.set(transport, now + (this.deps.refreshMs ?? 5_000));
      return { kind: 'go' };
    }
    this.clear.delete(transport);
    if (now < item.probeAt) return { kind: 'wait', until: item.probeAt, reason: item.reason };
    // Due: one row probes. The conditional write on the version picks it; the others wait for its answer.
    // Not a state change (no version, no history entry: the archive records the hold's changes only).
    const claimed = await this.update(
      transport,
      'SET #probeAt = :next',
      '#probeAt = :seen AND #state = :held',
      { ':next': now + PROBE_TIMEOUT_MS, ':seen': item.probeAt, ':held': 'held' },
    );
    if (claimed) return { kind: 'probe', reason: item.reason };
    const moved = await this.read(transport);
    if (moved?.holdState !== 'held') return { kind: 'go' };
    return { kind: 'wait', until: Math.max(moved.probeAt, now + 1_000), reason: moved.reason };
  }

  /**
   * A hold answer arrived: the transport is held until the provider's `until`, or for `retryMs` (the
   * adapter's documented wait) before a probe. Returns whether this answer opened the hold.
   */
  async hold(
    transport: string,
    hold: TransportHold,
    retryMs: number,
    why: string,
    now: number,
  ): Promise<{ opened: boolean; probeAt: number }> {
    const probeAt = hold.until ?? now + retryMs;
    for (let round = 0; round < 4; round += 1) {
      const item = await this.read(transport);
      const opening = item?.holdState !== 'held';
      const entry = { s: opening ? 'hold_started' : 'hold_extended', at: now, by: this.deps.workerId, why };
      const ok = await this.update(
        transport,
        'SET #kind = :kind, #transport = :t, #state = :held, #reason = :reason, #since = :since, #probeAt = :probeAt, ' +
          '#by = :by, #why = :why, #version = if_not_exists(#version, :zero) + :one, ' +
          '#history = list_append(if_not_exists(#history, :empty), :entry)' +
          (hold.until !== undefined ? ', #until = :until' : ' REMOVE #until'),
        item ? '#version = :v' : 'attribute_not_exists(#pk)',
        {
          ':kind': 'transport_hold',
          ':t': transport,
          ':held': 'held',
          ':reason': hold.reason,
          ':since': opening ? now : item.since,
          ':probeAt': probeAt,
          ':by': this.deps.workerId,
          ':why': why,
          ':zero': 0,
          ':one': 1,
          ':empty': [],
          ':entry': [entry],
          ...(hold.until !== undefined ? { ':until': hold.until } : {}),
          ...(item ? { ':v': item.version } : {}),
        },
        { '#until': 'until' },
      );
      if (!ok) continue;
      this.clear.delete(transport);
      if (opening) {
        this.deps.metrics?.count(HOLD_METRIC.started);
        this.deps.logger?.warn('transport held: its rows wait in the ledger', {
          transport,
          reason: hold.reason,
          probeAt,
        });
      }
      return { opened: opening, probeAt };
    }
    return { opened: false, probeAt };
  }

  /** The probe's send was accepted: the hold is lifted (kept, with its history, as `lifted`). */
  async lift(transport: string, why: string, now: number): Promise<boolean> {
    const item = await this.read(transport);
    if (item?.holdState !== 'held') return false;
    const ok = await this.update(
      transport,
      'SET #state = :lifted, #version = #version + :one, #history = list_append(#history, :entry)',
      '#version = :v',
      {
        ':lifted': 'lifted',
        ':one': 1,
        ':v': item.version,
        ':entry': [{ s: 'hold_lifted', at: now, by: this.deps.workerId, why }],
      },
    );
    if (ok) this.deps.metrics?.count(HOLD_METRIC.lifted);
    return ok;
  }

  async read(transport: string): Promise<HoldItem | undefined> {
    const out = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: holdKey(transport) }, ConsistentRead: true }),
    );
    return out.Item as HoldItem | undefined;
  }

  private async update(
    transport: string,
    update: string,
    condition: string,
    values: Record<string, unknown>,
    extraNames: Record<string, string> = {},
  ): Promise<boolean> {
    const text = `${update} ${condition}`;
    const names = Object.fromEntries(
      Object.entries({
        '#kind': 'kind',
        '#transport': 'transport',
        // Not `state`: operator scans read `state` as a delivery row's (lib/ledger/DynamoOperatorQueries.ts).
        '#state': 'holdState',
        '#reason': 'reason',
        '#since': 'since',
        '#probeAt': 'probeAt',
        '#by': 'by',
        '#why': 'why',
        '#version': 'version',
        '#history': 'history',
        '#pk': 'pk',
        ...extraNames,
      }).filter(([placeholder]) => new RegExp(`${placeholder}\\b`).test(text)),
    );
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: holdKey(transport) },
          UpdateExpression: update,
          ConditionExpression: condition,
          ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}

/** The transport names a configuration's channels send through (`simulator` is the REST adapter). */
export const transportNamesOf = (config: { emailTransport: string; smsTransport: string }): string[] => [
  ...new Set([config.emailTransport, config.smsTransport].map((t) => (t === 'simulator' ? 'rest' : t))),
];

/**
 * The holds of the named transports that stand now (one GetItem each, the functions' own grant): for
 * `sendproof stats` and the console's holds panel.
 */
export const activeHolds = async (
  client: DynamoDBDocumentClient,
  tableName: string,
  transports: readonly string[],
): Promise<HoldView[]> => {
  const items = await Promise.all(
    [...new Set(transports)].map(async (t) => {
      const out = await client.send(
        new GetCommand({ TableName: tableName, Key: { pk: holdKey(t) }, ConsistentRead: true }),
      );
      return out.Item as HoldItem | undefined;
    }),
  );
  return items
    .filter((item): item is HoldItem => item?.holdState === 'held')
    .map(({ pk: _pk, kind: _kind, history: _history, ...view }) => view)
    .sort((a, b) => a.transport.localeCompare(b.transport));
};
