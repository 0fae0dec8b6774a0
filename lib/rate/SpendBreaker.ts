import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type BreakerView, decideBreaker, freshWindowStart, windowStartOf } from '../domain/spendBreaker.js';

/** The breaker's item in the ledger table: one per purpose and destination country. */
export const BREAKER_PREFIX = 'brk#';
export const breakerKey = (purpose: string, country: string): string =>
  `${BREAKER_PREFIX}${purpose}#${country}`;

export interface BreakerPolicy {
  maxSends: number;
  windowSeconds: number;
  cooldownSeconds: number;
}

export type BreakerAnswer = { ok: true } | { ok: false; openUntil: number; opened: boolean };

export const BREAKER_METRIC = {
  opened: 'SpendBreakerOpened',
  closed: 'SpendBreakerClosed',
  /** Emitted by the admission layer, with purpose and country dimensions. */
  refused: 'SpendBreakerRefused',
} as const;

interface BreakerItem extends BreakerView {
  pk: string;
  kind: 'breaker';
  version: number;
  history: Array<{ s: string; at: number; by: string; why: string }>;
}

/**
 * The SMS spend circuit breaker, per purpose and country (never a number: the key holds the country
 * code). `count` is one conditional UpdateItem per SMS on the happy path (ADD sends 1 while the window
 * has room and the breaker is closed), so concurrent dispatchers can never let more than `maxSends` a
 * window through. State changes (open, close after the cool-down, an operator's reset) append to the
 * item's history and bump its version, so the archive records them like ledger transitions
 * (record_kind `breaker`).
 */
export class SpendBreaker {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly deps: {
      workerId: string;
      metrics?: { count(name: string, value?: number): void };
      logger?: { warn(message: string, ...extra: Array<Record<string, unknown>>): void };
    },
  ) {}

  /** Counts one SMS about to be sent, or refuses it while the breaker is open. */
  async count(purpose: string, country: string, policy: BreakerPolicy, now: number): Promise<BreakerAnswer> {
    const pk = breakerKey(purpose, country);
    const windowStart = windowStartOf(now, policy.windowSeconds);
    for (let round = 0; round < 4; round += 1) {
      // `>=`: a newer window than this clock's (a dispatcher ahead of this one started it) counts too.
      const refused = await this.update({
        pk,
        update: 'ADD #sends :one',
        condition: '#state = :closed AND #windowStart >= :ws AND #sends < :max',
        values: { ':one': 1, ':closed': 'closed', ':ws': windowStart, ':max': policy.maxSends },
      });
      if (!refused.failed) return { ok: true };
      const step = decideBreaker(refused.item, { now, windowStart, maxSends: policy.maxSends });
      switch (step.kind) {
        case 'open':
          return { ok: false, openUntil: step.until, opened: false };
        case 'retry':
          continue;
        case 'new_window': {
          const started = await this.update({
            pk,
            update:
              'SET #kind = :kind, #state = :closed, #windowStart = :ws, #sends = :one, #version = if_not_exists(#version, :zero), #history = if_not_exists(#history, :empty)',
            // `<`, never `<>`: a lagging clock must not reset the count into an older window.
            condition: 'attribute_not_exists(#windowStart) OR (#state = :closed AND #windowStart < :ws)',
            values: {
              ':kind': 'breaker',
              ':closed': 'closed',
              ':ws': windowStart,
              ':one': 1,
              ':zero': 0,
              ':empty': [],
            },
          });
          if (!started.failed) return { ok: true };
          continue;
        }
        case 'close_and_count': {
          const closed = await this.transition(pk, refused.item, 'closed', 'cooldown_elapsed', now, {
            windowStart: freshWindowStart(refused.item, windowStart),
            sends: 1,
          });
          if (closed) {
            this.deps.metrics?.count(BREAKER_METRIC.closed);
            return { ok: true };
          }
          continue;
        }
        case 'trip': {
          const openUntil = now + policy.cooldownSeconds * 1000;
          const opened = await this.transition(
            pk,
            refused.item,
            'open',
            `threshold_crossed:${policy.maxSends}/${policy.windowSeconds}s`,
            now,
            { openUntil },
          );
          if (opened) {
            this.deps.metrics?.count(BREAKER_METRIC.opened);
            this.deps.logger?.warn('SMS spend breaker opened', { purpose, country, openUntil });
          }
          return { ok: false, openUntil, opened };
        }
      }
    }
    // Still moving after four rounds: refuse rather than risk an uncounted send.
    return { ok: false, openUntil: now, opened: false };
  }

  /** An operator's `sendproof breaker reset`: closed now, a fresh count, the operator and reason recorded. */
  async reset(
    purpose: string,
    country: string,
    by: { operator: string; reason: string },
    now: number,
  ): Promise<{ reset: boolean; previous?: BreakerView }> {
    const pk = breakerKey(purpose, country);
    for (let round = 0; round < 4; round += 1) {
      const item = await this.read(purpose, country);
      if (!item) return { reset: false };
      const ok = await this.transition(
        pk,
        item,
        'closed',
        `operator_reset:${by.reason}`.slice(0, 120),
        now,
        {
          // A fresh count: the next send starts a new window.
          sends: 0,
          windowStart: 0,
        },
        `operator:${by.operator}`,
      );
      if (ok) {
        this.deps.metrics?.count(BREAKER_METRIC.closed);
        return { reset: true, previous: item };
      }
    }
    return { reset: false };
  }

  async read(purpose: string, country: string): Promise<BreakerItem | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: breakerKey(purpose, country) },
        ConsistentRead: true,
      }),
    );
    return out.Item as BreakerItem | undefined;
  }

  /** A state change conditioned on the version read: one writer records it. */
  private async transition(
    pk: string,
    item: (BreakerView & { version?: number }) | undefined,
    to: 'open' | 'closed',
    why: string,
    now: number,
    set: { openUntil?: number; windowStart?: number; sends?: number },
    by = this.deps.workerId,
  ): Promise<boolean> {
    const version = (item as { version?: number } | undefined)?.version ?? 0;
    const sets = ['#state = :to', '#version = #version + :one', '#history = list_append(#history, :entry)'];
    const values: Record<string, unknown> = {
      ':to': to,
      ':one': 1,
      ':v': version,
      ':entry': [{ s: to === 'open' ? 'breaker_open' : 'breaker_closed', at: now, by, why }],
    };
    for (const [key, value] of Object.entries(set)) {
      sets.push(`#${key} = :${key}`);
      values[`:${key}`] = value;
    }
    const removes = to === 'closed' ? ' REMOVE #openUntil' : '';
    const names: Record<string, string> = Object.fromEntries(Object.keys(set).map((k) => [`#${k}`, k]));
    const result = await this.update({
      pk,
      update: `SET ${sets.join(', ')}${removes}`,
      condition: '#version = :v',
      values,
      names: { ...names, ...(to === 'closed' ? { '#openUntil': 'openUntil' } : {}) },
    });
    return !result.failed;
  }

  private async update(input: {
    pk: string;
    update: string;
    condition: string;
    values: Record<string, unknown>;
    names?: Record<string, string>;
  }): Promise<{ failed: false } | { failed: true; item: (BreakerView & { version?: number }) | undefined }> {
    const allNames: Record<string, string> = {
      '#state': 'state',
      '#windowStart': 'windowStart',
      '#sends': 'sends',
      '#version': 'version',
      '#history': 'history',
      '#kind': 'kind',
      ...(input.names ?? {}),
    };
    const used = `${input.update} ${input.condition}`;
    const names = Object.fromEntries(Object.entries(allNames).filter(([k]) => used.includes(k)));
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: input.pk },
          UpdateExpression: input.update,
          ConditionExpression: input.condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: input.values,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { failed: false };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const raw = error.Item as Record<string, { N?: string; S?: string }> | undefined;
      if (!raw) return { failed: true, item: undefined };
      const num = (k: string) => (raw[k]?.N !== undefined ? Number(raw[k]!.N) : undefined);
      const state = raw.state?.S as 'open' | 'closed' | undefined;
      return {
        failed: true,
        item: {
          ...(state ? { state } : {}),
          ...(num('windowStart') !== undefined ? { windowStart: num('windowStart')! } : {}),
          ...(num('sends') !== undefined ? { sends: num('sends')! } : {}),
          ...(num('openUntil') !== undefined ? { openUntil: num('openUntil')! } : {}),
          ...(num('version') !== undefined ? { version: num('version')! } : {}),
        },
      };
    }
  }
}
