import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetByPk } from '../aws/batchGet.js';
import { type Config, type ProviderCircuitSettings, providersOf } from '../config.js';
import type { MetricsSink, RunLogger } from '../observability.js';
import { CIRCUIT_METRIC } from './circuitMetric.js';
import { NEVER_LEFT_REASONS } from './classify.js';
import type { SendResult } from './port.js';

/**
 * Provider health, shared by every execution environment: one small item per provider in the ledger
 * table (`health#<provider>`), modelled on the SMS spend breaker's (lib/rate/SpendBreaker.ts).
 *
 *   closed ──(`failures` 5xx / never-left answers within `windowSeconds`)──► open
 *   closed ──(delivery reports fall behind: the reconcile run's judgement, ReportLagJudge)──► open
 *   open ──(`openSeconds` later, one dispatcher takes the probe)──► half_open
 *   half_open ──(the probe is answered by the provider)──► closed
 *   half_open ──(the probe fails the same way)──► open (another `openSeconds`)
 *
 * The happy path writes nothing: a success while closed is not recorded, and the item is read at most
 * once per `cacheMs` per process. A failure is one conditional UpdateItem (ADD failures 1 in the
 * current window); the state changes are conditioned on the version read, so one writer opens (or
 * closes) the circuit and records it in the item's history, and counts the metric.
 *
 * Only answers that say the provider itself is failing count: a 5xx (`provider_error_after_send`) and a
 * request that never left (connect refused, DNS, TLS, not fully written). A refusal of the recipient or
 * the content, a throttle and a timeout do not.
 */
export const HEALTH_PREFIX = 'health#';
export const healthKey = (provider: string): string => `${HEALTH_PREFIX}${provider}`;

export { CIRCUIT_METRIC };

/** How long a probe belongs to the dispatcher that took it; after that another may probe. */
export const PROBE_LEASE_MS = 30_000;

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitView {
  provider: string;
  state: CircuitState;
  /** Failures counted in the current window (closed). */
  failures: number;
  windowStart?: number;
  /** Open: when a probe may be sent. */
  openUntil?: number;
  /** Half-open: until when the probe belongs to its dispatcher. */
  probeUntil?: number;
  /** Why it opened last (`failures:3/60s`, `probe_failed:…`, `slow_reports:14/20/1800s`). */
  reason?: string;
  version: number;
  history: Array<{ s: string; at: number; by: string; why: string }>;
}

/** What a dispatcher may do with a provider now. */
export type CircuitAdmit = { kind: 'closed' } | { kind: 'probe' } | { kind: 'open'; until: number };

/** Whether an answer says the provider is failing (counts toward opening its circuit). */
export const isProviderFailure = (result: SendResult): boolean =>
  (result.kind === 'ambiguous' && result.reason.startsWith('provider_error_after_send')) ||
  (result.kind === 'retryable' &&
    !result.hold &&
    NEVER_LEFT_REASONS.some((r) => result.reason.startsWith(r)));

/** Whether an answer came from a working provider (a probe with it closes the circuit). */
export const isProviderAnswer = (result: SendResult): boolean =>
  result.kind === 'accepted' || (result.kind === 'rejected' && result.cause !== 'provider');

/** The circuit port the dispatcher uses (tests may give a memory one; deployments the DynamoDB item). */
export interface ProviderCircuits {
  admit(provider: string): Promise<CircuitAdmit>;
  observe(provider: string, result: SendResult, probe: boolean): Promise<void>;
  read(provider: string): Promise<CircuitView>;
}

export interface ProviderHealthDeps {
  settings: Pick<ProviderCircuitSettings, 'failures' | 'windowSeconds' | 'openSeconds' | 'cacheMs'>;
  workerId: string;
  now: () => number;
  metrics?: MetricsSink;
  logger?: RunLogger;
}

const closedView = (provider: string): CircuitView => ({
  provider,
  state: 'closed',
  failures: 0,
  version: 0,
  history: [],
});

/** A `health#<provider>` item as a view; no item: closed, never failed. */
export const circuitViewOf = (provider: string, stored: Record<string, unknown> | undefined): CircuitView => {
  const item = stored as Partial<CircuitView> | undefined;
  if (!item?.state) return closedView(provider);
  return {
    provider,
    state: item.state,
    failures: item.failures ?? 0,
    ...(item.windowStart !== undefined ? { windowStart: item.windowStart } : {}),
    ...(item.openUntil !== undefined ? { openUntil: item.openUntil } : {}),
    ...(item.probeUntil !== undefined ? { probeUntil: item.probeUntil } : {}),
    ...(item.reason !== undefined ? { reason: item.reason } : {}),
    version: item.version ?? 0,
    history: item.history ?? [],
  };
};

/**
 * The channels that fail over (more than one provider) with their providers in failover order, by the
 * name their circuit is kept under (the transport's name: `simulator` is the REST adapter, `rest`). A
 * channel with one provider has no circuit: nothing to skip to, so the dispatcher reads none.
 */
export const failoverChainsOf = (
  config: Pick<Config, 'emailTransport' | 'smsTransport' | 'emailProviders' | 'smsProviders'>,
): Array<{ channel: 'email' | 'sms'; providers: string[] }> =>
  (['email', 'sms'] as const)
    .map((channel) => ({
      channel,
      providers: providersOf(config, channel).map((name: string) => (name === 'simulator' ? 'rest' : name)),
    }))
    .filter((chain) => chain.providers.length > 1);

/**
 * The circuits of the named providers (one entry each, in the order asked, a provider with no item is
 * closed): one strongly consistent BatchGetItem of their `health#` items, never a Scan of the ledger.
 * For `sendproof stats`, the console's circuits panel and the report-lag judgement.
 */
export const readCircuits = async (
  client: DynamoDBDocumentClient,
  tableName: string,
  providers: readonly string[],
): Promise<CircuitView[]> => {
  const names = [...new Set(providers)];
  const found = await batchGetByPk(client, tableName, names.map(healthKey), { consistentRead: true });
  return names.map((p) => circuitViewOf(p, found.get(healthKey(p))));
};

/** Every failover channel's circuits, in failover order, from one read of their items (readCircuits). */
export const readFailoverCircuits = async (
  client: DynamoDBDocumentClient,
  tableName: string,
  chains: ReadonlyArray<{ channel: 'email' | 'sms'; providers: readonly string[] }>,
): Promise<Array<{ channel: 'email' | 'sms'; circuits: CircuitView[] }>> => {
  const views = new Map(
    (
      await readCircuits(
        client,
        tableName,
        chains.flatMap((c) => c.providers),
      )
    ).map((v) => [v.provider, v]),
  );
  return chains.map((c) => ({
    channel: c.channel,
    circuits: c.providers.map((p) => views.get(p) ?? closedView(p)),
  }));
};

/**
 * Failures counted in the current window: the item keeps the count of the window it last counted in, so
 * a count of an older window is 0 now (the next failure starts the window again).
 */
export const failuresInWindow = (view: CircuitView, windowSeconds: number, now: number): number =>
  view.state === 'closed' && view.windowStart !== undefined && now < view.windowStart + windowSeconds * 1000
    ? view.failures
    : 0;

export class ProviderHealth implements ProviderCircuits {
  private readonly cache = new Map<string, { view: CircuitView; at: number }>();

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly deps: ProviderHealthDeps,
  ) {}

  async admit(provider: string): Promise<CircuitAdmit> {
    const now = this.deps.now();
    const view = await this.cached(provider, now);
    if (view.state === 'closed') return { kind: 'closed' };
    if (view.state === 'open' && (view.openUntil ?? 0) > now) return { kind: 'open', until: view.openUntil! };
    if (view.state === 'half_open' && (view.probeUntil ?? 0) > now)
      return { kind: 'open', until: view.probeUntil! };
    // Due for a probe: one dispatcher takes it (conditioned on the version it read).
    const fresh = await this.read(provider);
    const due =
      (fresh.state === 'open' && (fresh.openUntil ?? 0) <= now) ||
      (fresh.state === 'half_open' && (fresh.probeUntil ?? 0) <= now);
    if (fresh.state === 'closed') return { kind: 'closed' };
    if (!due) return { kind: 'open', until: fresh.openUntil ?? fresh.probeUntil ?? now };
    const taken = await this.transition(fresh, 'half_open', 'probe_taken', now, {
      probeUntil: now + PROBE_LEASE_MS,
    });
    this.cache.delete(provider);
    return taken ? { kind: 'probe' } : { kind: 'open', until: now + PROBE_LEASE_MS };
  }

  async observe(provider: string, result: SendResult, probe: boolean): Promise<void> {
    const now = this.deps.now();
    const failure = isProviderFailure(result);
    if (probe) {
      const view = await this.read(provider);
      if (view.state !== 'half_open') return;
      if (failure) {
        const { openSeconds } = this.deps.settings;
        if (
          await this.transition(view, 'open', `probe_failed:${result.kind}`, now, {
            openUntil: now + openSeconds * 1000,
          })
        )
          this.opened(provider, `probe_failed:${result.kind}`);
      } else if (isProviderAnswer(result)) {
        if (await this.transition(view, 'closed', `probe_answered:${result.kind}`, now, { failures: 0 })) {
          this.deps.metrics?.count(CIRCUIT_METRIC.closed, 1, { provider });
          this.deps.logger?.info('provider circuit closed', { provider });
        }
      }
      this.cache.delete(provider);
      return;
    }
    if (!failure) return;
    await this.countFailure(provider, now);
  }

  /**
   * Opens a closed circuit for a reason found off the dispatch path: the reconcile run's judgement that the
   * provider's delivery reports fall behind (lib/transports/ReportLagJudge.ts). The same opening as the
   * failure counter's: conditioned on the version read (one writer records it, one history entry, one
   * ProviderCircuitOpened), open for `openSeconds`, then half-open with a probe as usual. An open or
   * half-open circuit is left as it is. `known`: the view the caller just read (its version conditions
   * the write, so a stale one only loses the race). Returns whether this call opened it.
   */
  async open(provider: string, why: string, known?: CircuitView): Promise<boolean> {
    const now = this.deps.now();
    const view = known ?? (await this.read(provider));
    if (view.state !== 'closed') return false;
    const opened = await this.transition(view, 'open', why, now, {
      openUntil: now + this.deps.settings.openSeconds * 1000,
    });
    if (opened) this.opened(provider, why);
    this.cache.delete(provider);
    return opened;
  }

  async read(provider: string): Promise<CircuitView> {
    const out = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: healthKey(provider) }, ConsistentRead: true }),
    );
    const view = circuitViewOf(provider, out.Item);
    this.cache.set(provider, { view, at: this.deps.now() });
    return view;
  }

  private async cached(provider: string, now: number): Promise<CircuitView> {
    const hit = this.cache.get(provider);
    if (hit && now - hit.at < this.deps.settings.cacheMs) return hit.view;
    return this.read(provider);
  }

  private async countFailure(provider: string, now: number): Promise<void> {
    const { failures, windowSeconds } = this.deps.settings;
    const windowMs = windowSeconds * 1000;
    const windowStart = Math.floor(now / windowMs) * windowMs;
    const pk = healthKey(provider);
    for (let round = 0; round < 3; round += 1) {
      try {
        const out = await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk },
            UpdateExpression: 'ADD #failures :one',
            ConditionExpression: '#state = :closed AND #windowStart >= :ws',
            ExpressionAttributeNames: {
              '#failures': 'failures',
              '#state': 'state',
              '#windowStart': 'windowStart',
            },
            ExpressionAttributeValues: { ':one': 1, ':closed': 'closed', ':ws': windowStart },
            ReturnValues: 'ALL_NEW',
          }),
        );
        const item = out.Attributes as CircuitView | undefined;
        if (item && item.failures >= failures) {
          const view = { ...item, provider, history: item.history ?? [] };
          const why = `failures:${item.failures}/${windowSeconds}s`;
          if (
            await this.transition(view, 'open', why, now, {
              openUntil: now + this.deps.settings.openSeconds * 1000,
            })
          )
            this.opened(provider, why);
        }
        this.cache.delete(provider);
        return;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
      // No item, an older window, or not closed (then nothing to count).
      try {
        await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk },
            UpdateExpression:
              'SET #kind = :kind, #state = :closed, #windowStart = :ws, #failures = :zero, #version = if_not_exists(#version, :zero), #history = if_not_exists(#history, :empty)',
            // A circuit the report-lag judgement opened (and a probe closed) has no window yet.
            ConditionExpression:
              'attribute_not_exists(#state) OR (#state = :closed AND (attribute_not_exists(#windowStart) OR #windowStart < :ws))',
            ExpressionAttributeNames: {
              '#kind': 'kind',
              '#state': 'state',
              '#windowStart': 'windowStart',
              '#failures': 'failures',
              '#version': 'version',
              '#history': 'history',
            },
            ExpressionAttributeValues: {
              ':kind': 'provider_health',
              ':closed': 'closed',
              ':ws': windowStart,
              ':zero': 0,
              ':empty': [],
            },
          }),
        );
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        // Open or half-open: a failure while open is not counted (nothing is sent but probes).
        const view = await this.read(provider);
        if (view.state !== 'closed') return;
      }
    }
  }

  private opened(provider: string, why: string): void {
    this.deps.metrics?.count(CIRCUIT_METRIC.opened, 1, { provider });
    this.deps.logger?.warn('provider circuit opened', { provider, why });
  }

  /** A state change conditioned on the version read: one writer records it. */
  private async transition(
    view: Pick<CircuitView, 'version'> & { provider: string },
    to: CircuitState,
    why: string,
    now: number,
    set: { openUntil?: number; probeUntil?: number; failures?: number },
  ): Promise<boolean> {
    const names: Record<string, string> = {
      '#kind': 'kind',
      '#state': 'state',
      '#version': 'version',
      '#history': 'history',
      '#reason': 'reason',
    };
    const values: Record<string, unknown> = {
      ':kind': 'provider_health',
      ':to': to,
      ':v': view.version ?? 0,
      ':one': 1,
      ':zero': 0,
      ':empty': [],
      ':entry': [{ s: `circuit_${to}`, at: now, by: this.deps.workerId, why }],
    };
    const sets = [
      '#kind = :kind',
      '#state = :to',
      '#version = if_not_exists(#version, :zero) + :one',
      '#history = list_append(if_not_exists(#history, :empty), :entry)',
    ];
    if (to === 'open') {
      sets.push('#reason = :why');
      values[':why'] = why;
    }
    for (const [key, value] of Object.entries(set)) {
      names[`#${key}`] = key;
      values[`:${key}`] = value;
      sets.push(`#${key} = :${key}`);
    }
    const removes: string[] = [];
    for (const key of ['openUntil', 'probeUntil'] as const)
      if (!(key in set)) {
        names[`#${key}`] = key;
        removes.push(`#${key}`);
      }
    if (to !== 'open') delete names['#reason'];
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: healthKey(view.provider) },
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: 'attribute_not_exists(#version) OR #version = :v',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return false;
    }
  }
}
