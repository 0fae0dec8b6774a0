import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  type AimdLimits,
  type AimdState,
  isThrottle,
  nextSlotWithCredit,
  onSuccess,
  onThrottle,
  slotCredit,
  slotOf,
  slotStart,
} from '../domain/pacing.js';
import type { RateSettings } from './settings.js';

/** Rate-control items live in the ledger table under this prefix; they carry no history (not archived). */
export const RATE_PREFIX = 'rate#';

/** Where the shared slot counters live: DynamoDB in every deployment (TokenSlots); tests may use memory. */
export interface SlotStore {
  /** Takes up to `want` tokens of the slot starting at `start` whose limit is `limit`; returns how many. */
  take(key: string, start: number, limit: number, want: number): Promise<number>;
}

/**
 * The shared slot counters: one item per key and slot (`rate#<key>#<slotStart>`, TTL an hour later).
 * `take` is ONE conditional UpdateItem for a batch of tokens (ADD used :n if used + n ≤ limit); a refusal
 * returns the item, so a partly used slot is taken with a second write and a full one is skipped.
 */
export class TokenSlots implements SlotStore {
  /** Write units consumed so far (the benchmark reads it). */
  writeUnits = 0;
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async take(key: string, start: number, limit: number, want: number): Promise<number> {
    let n = Math.min(want, limit);
    for (let round = 0; round < 2 && n > 0; round += 1) {
      try {
        const out = await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: `${RATE_PREFIX}${key}#${start}` },
            UpdateExpression: 'ADD #used :n SET #ttl = if_not_exists(#ttl, :ttl)',
            ConditionExpression: 'attribute_not_exists(#used) OR #used <= :max',
            ExpressionAttributeNames: { '#used': 'used', '#ttl': 'ttl' },
            ExpressionAttributeValues: { ':n': n, ':max': limit - n, ':ttl': Math.ceil(start / 1000) + 3600 },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        this.writeUnits += out.ConsumedCapacity?.CapacityUnits ?? 1;
        return n;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        // A refused conditional write still consumes one write unit.
        this.writeUnits += 1;
        const used = Number((error.Item as { used?: { N?: string } } | undefined)?.used?.N ?? limit);
        n = Math.min(n, limit - used);
      }
    }
    return 0;
  }
}

/** A token an admitted send holds: its lane and slot, so an unspent one can go back (`refund`). */
export interface PaceToken {
  lane: string;
  slot: number;
}

export type Admit = { ok: true; waitedMs: number; tokens: PaceToken[] } | { ok: false; retryAt: number };

interface Lane {
  name: string;
  slotMs: number;
  aimd?: AimdLimits;
  state: AimdState;
  /** Tokens this process holds: for slot `slot`, `remaining` left. */
  slot: number;
  remaining: number;
  /** The first slot not known to be full. */
  scanFrom: number;
  /** Acquires of this lane run one at a time in this process (the reservation is the critical part). */
  queue: Promise<unknown>;
  waiting: number;
}

export interface PacerDeps {
  slots: SlotStore;
  settings: RateSettings;
  now: () => number;
  sleep?: (ms: number) => Promise<void>;
  metrics?: { count(name: string, value?: number): void };
  logger?: { info(message: string, ...extra: Array<Record<string, unknown>>): void };
}

export const PACER_METRIC = {
  tokenWaits: 'TokensWaited',
  tokenWaitMs: 'TokenWaitMs',
  paced: 'Paced',
  paceDecreased: 'PaceDecreased',
  paceRestored: 'PaceRestored',
  refunded: 'TokensRefunded',
} as const;

/**
 * The rate limit in front of the provider call: per transport (sends per second, AIMD on throttles) and
 * per tenant (sends per minute). Each execution environment holds the tokens it reserved in a shared
 * slot and reserves a batch at a time, as many as it has callers waiting (at most one slot's worth), so
 * on a busy queue a notification costs a fraction of one write. `acquire` waits in memory up to
 * `maxWaitMs`; beyond that it answers `retryAt` and the dispatcher parks the row without spending an
 * attempt.
 */
export class Pacer {
  private readonly lanes = new Map<string, Lane>();
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: PacerDeps) {
    this.sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  /** True when some limit applies to this transport or tenant. */
  applies(transport: string, tenant: string): boolean {
    return (
      this.deps.settings.transports[transport] !== undefined ||
      this.deps.settings.tenants[tenant] !== undefined
    );
  }

  async acquire(transport: string, tenant: string): Promise<Admit> {
    const started = this.deps.now();
    const deadline = started + this.deps.settings.maxWaitMs;
    const tokens: PaceToken[] = [];
    const tenantLimit = this.deps.settings.tenants[tenant];
    if (tenantLimit) {
      const lane = this.lane(`tenant:${tenant}`, 60_000, tenantLimit.perMinute / 60);
      const got = await this.take(lane, `tenant#${tenant}`, deadline);
      if (!got.ok) return this.paced(got.retryAt);
      tokens.push(got.token);
    }
    const rate = this.deps.settings.transports[transport];
    if (rate) {
      const lane = this.lane(`transport:${transport}`, rate.slotMs, rate.perSecond, {
        ceiling: rate.perSecond,
        floor: rate.floorPerSecond ?? rate.perSecond / 10,
        decreaseEveryMs: 1_000,
      });
      const got = await this.take(lane, `transport#${transport}`, deadline);
      if (!got.ok) {
        // The tenant's token is not spent either.
        this.refund(tokens);
        return this.paced(got.retryAt);
      }
      tokens.push(got.token);
    }
    const waitedMs = this.deps.now() - started;
    if (waitedMs > 0) {
      this.deps.metrics?.count(PACER_METRIC.tokenWaits);
      this.deps.metrics?.count(PACER_METRIC.tokenWaitMs, waitedMs);
    }
    return { ok: true, waitedMs, tokens };
  }

  /**
   * Tokens an admitted send did not spend (its claim conflicted, a later gate refused it): each goes
   * back to this environment's share while its slot is still open, for the next caller. Nothing is
   * written: the shared count already holds it, and a token whose slot has passed is simply not reused,
   * so a refund can make the pace lower than configured, never higher.
   */
  refund(tokens: readonly PaceToken[]): void {
    const now = this.deps.now();
    for (const token of tokens) {
      const lane = this.lanes.get(token.lane);
      if (!lane || lane.slot !== token.slot) continue;
      if (slotStart(token.slot + 1, lane.slotMs) <= now) continue;
      lane.remaining += 1;
      this.deps.metrics?.count(PACER_METRIC.refunded);
    }
  }

  /** The provider's answer adjusts the pace: a throttle halves it, an acceptance adds a little back. */
  observe(transport: string, result: { kind: string; reason?: string }): void {
    const lane = this.lanes.get(`transport:${transport}`);
    if (!lane?.aimd) return;
    const before = lane.state.rate;
    if (isThrottle(result)) lane.state = onThrottle(lane.state, lane.aimd, this.deps.now());
    else if (result.kind === 'accepted') lane.state = onSuccess(lane.state, lane.aimd);
    if (lane.state.rate < before) {
      this.deps.metrics?.count(PACER_METRIC.paceDecreased);
      this.deps.logger?.info('pace lowered after a provider throttle', {
        transport,
        perSecond: lane.state.rate,
      });
    } else if (lane.state.rate === lane.aimd.ceiling && before < lane.aimd.ceiling)
      this.deps.metrics?.count(PACER_METRIC.paceRestored);
  }

  /** This environment's current pace for a transport (tests and the benchmark read it). */
  rateOf(transport: string): number | undefined {
    return this.lanes.get(`transport:${transport}`)?.state.rate;
  }

  private paced(retryAt: number): Admit {
    this.deps.metrics?.count(PACER_METRIC.paced);
    return { ok: false, retryAt };
  }

  private lane(name: string, slotMs: number, rate: number, aimd?: AimdLimits): Lane {
    let lane = this.lanes.get(name);
    if (!lane) {
      lane = {
        name,
        slotMs,
        ...(aimd ? { aimd } : {}),
        state: { rate, lastDecreaseAt: Number.NEGATIVE_INFINITY },
        slot: -1,
        remaining: 0,
        scanFrom: 0,
        queue: Promise.resolve(),
        waiting: 0,
      };
      this.lanes.set(name, lane);
    }
    return lane;
  }

  /** One token of a lane: from what this process holds, or reserved in the next slot with room. */
  private async take(
    lane: Lane,
    key: string,
    deadline: number,
  ): Promise<{ ok: true; token: PaceToken } | { ok: false; retryAt: number }> {
    lane.waiting += 1;
    const turn = lane.queue.then(() => this.reserve(lane, key, deadline));
    lane.queue = turn.catch(() => undefined);
    let at: Awaited<ReturnType<Pacer['reserve']>>;
    try {
      at = await turn;
    } finally {
      lane.waiting -= 1;
    }
    if (!at.ok) return at;
    const wait = slotStart(at.slot, lane.slotMs) - this.deps.now();
    if (wait > 0) await this.sleep(wait);
    return { ok: true, token: { lane: lane.name, slot: at.slot } };
  }

  private async reserve(
    lane: Lane,
    key: string,
    deadline: number,
  ): Promise<{ ok: true; slot: number } | { ok: false; retryAt: number }> {
    const now = this.deps.now();
    const current = slotOf(now, lane.slotMs);
    if (lane.slot >= current && lane.remaining > 0) {
      lane.remaining -= 1;
      return { ok: true, slot: lane.slot };
    }
    const rate = lane.state.rate;
    let slot = Math.max(current, lane.scanFrom);
    for (; slotStart(slot, lane.slotMs) <= deadline; slot += 1) {
      // A slot whose credit is zero (a rate below one send per slot) is skipped without a write.
      const limit = slotCredit(slot, rate, lane.slotMs);
      if (limit === 0) continue;
      // As many tokens as this environment has callers waiting, and at least half a slot: one write
      // serves the callers that follow within the slot, and a busy slot is shared by two environments
      // at most, so little is held that another environment could have used.
      const want = Math.min(limit, Math.max(lane.waiting, Math.ceil(limit / 2)));
      const granted = await this.deps.slots.take(key, slotStart(slot, lane.slotMs), limit, want);
      if (granted > 0) {
        lane.slot = slot;
        lane.remaining = granted - 1;
        // A slot taken whole is full once these tokens are used: the next reservation starts after it.
        lane.scanFrom = granted === limit ? slot + 1 : slot;
        return { ok: true, slot };
      }
      lane.scanFrom = slot + 1;
    }
    // Come back when a slot with credit opens, not at an empty one.
    return { ok: false, retryAt: slotStart(nextSlotWithCredit(slot, rate, lane.slotMs), lane.slotMs) };
  }
}
