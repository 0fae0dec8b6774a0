import { z } from 'zod';
import type { BundleDocument } from '../archive/bundle.js';
import type { AuditResult } from '../archive/DuckDbAudit.js';
import { NamedQueryError } from '../archive/namedQueries.js';
import type { Clock } from '../domain/clock.js';
import { SendproofError } from '../domain/errors.js';
import { IdentifierSchema } from '../domain/intent.js';
import { ChannelSchema } from '../domain/purposes.js';
import type { ATTENTION_STATES, DeliveryState } from '../domain/states.js';
import type { DeliveryRecord, Ledger, SuppressionList } from '../ledger/port.js';
import {
  type CancelReport,
  type CancelRequest,
  CancelRequestSchema,
} from '../publish/cancelNotifications.js';
import { DecisionRefusedError, type OperatorDecisions } from '../reconcile/OperatorDecisions.js';
import { type Authenticator, allows, type Principal, type Role } from './auth.js';
import { type ConsoleRequest, type ConsoleResponse, MAX_BODY_BYTES } from './http.js';
import {
  type AuditEntry,
  type AuditLog,
  type AuditQueries,
  AuditQueryFailed,
  type CapabilityLookup,
  type LedgerStats,
  type SuppressionEntry,
} from './ports.js';
import { type StaticFiles, securityHeaders } from './staticFiles.js';

/** Builds a notification's export bundle (lib/archive/bundle.ts) as one JSON document for download. */
export type BundleExporter = (
  subject: string,
  scope: { tenant: string; from: string; to: string },
) => Promise<BundleDocument>;

export interface ConsoleDeps {
  ledger: Ledger;
  decisions: OperatorDecisions;
  authenticate: Authenticator;
  clock: Clock;
  stats: () => Promise<LedgerStats>;
  /** The timeline's export-bundle link (local: the archive folder and the local signing key). */
  exportBundle?: BundleExporter;
  capabilities: CapabilityLookup;
  auditLog: AuditLog;
  audit?: AuditQueries;
  suppressions?: () => Promise<SuppressionEntry[]>;
  /** Operators may add a suppression (there is no removal in the suppression list port yet). */
  suppressionList?: SuppressionList;
  dlqDepth?: () => Promise<number>;
  /**
   * Cancel by business identity (`cancelNotifications()`): the operator is the authenticated principal.
   * The console holds no provider credentials, so a message a provider already holds for later is
   * reported `cancel_unconfirmed` (run `sendproof cancel` where the provider credentials are).
   */
  cancel?: (request: CancelRequest) => Promise<CancelReport>;
  /** The page and its files (local server); in AWS CloudFront serves them and this is absent. */
  staticFiles?: StaticFiles;
  /** Decision rows per principal per minute (a token bucket; the bulk size counts). Default 60. */
  decisionRowsPerMinute?: number;
  /** Allowed browser origin for the API (AWS: the CloudFront domain). Absent: same origin only. */
  allowedOrigin?: string;
  /** Unexpected failures (a 500): name and message only, never a request body. */
  logError?: (error: unknown) => void;
}

const defaultLogError = (error: unknown) =>
  process.stderr.write(
    `console: ${error instanceof Error ? `${error.name}: ${error.message}` : 'unexpected failure'}\n`,
  );

export type ConsoleHandler = (request: ConsoleRequest) => Promise<ConsoleResponse>;

const MAX_BULK = 50;
/** The attention lists are the attention index's states; `stalled` is the state the sweep writes. */
export const ATTENTION_LISTS = [
  'unknown',
  'quarantined',
  'retry_wait',
  'stalled',
] as const satisfies Readonly<typeof ATTENTION_STATES>;
type AttentionList = (typeof ATTENTION_LISTS)[number];

const AttentionQuery = z.strictObject({
  list: z.enum(ATTENTION_LISTS),
  tenant: z.string().max(128).optional(),
  purpose: z.string().max(128).optional(),
  channel: ChannelSchema.optional(),
  minAgeSeconds: z.coerce
    .number()
    .int()
    .min(0)
    .max(10 * 365 * 86_400)
    .optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(2048).optional(),
});

const TimelineQuery = z.strictObject({ key: z.string().min(1).max(1024) });
/** The tenant whose archive the overview's audit figures come from (intents default to `default`). */
const OverviewQuery = z.strictObject({ tenant: IdentifierSchema.default('default') });

const RunQueryBody = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9-]*$/),
  args: z.array(z.string().max(256)).max(10).default([]),
});

const DecisionBody = z
  .strictObject({
    keys: z.array(z.string().min(1).max(1024)).min(1).max(MAX_BULK),
    outcome: z.enum(['accepted', 'rejected', 'resend']),
    reason: z.string().trim().min(3).max(200),
    /** `resend` of a single row only: the new intent (the ledger never kept the addresses). */
    intent: z.record(z.string(), z.unknown()).optional(),
    decisionId: z.string().max(128).optional(),
  })
  .refine((b) => new Set(b.keys).size === b.keys.length, { message: 'keys must be distinct', path: ['keys'] })
  .refine((b) => b.outcome !== 'resend' || b.keys.length === 1, {
    message: 'resend takes one row at a time: each needs its own new intent',
    path: ['keys'],
  });

/** An address or a phone number must never become a suppression key or reason. */
const LOOKS_LIKE_CONTACT = /[^\s@]+@[^\s@]+|\+\d[\d\s().-]{6,}\d|\d{10,}/;
const noContact = (value: string) => !LOOKS_LIKE_CONTACT.test(value);

const SuppressBody = z.strictObject({
  tenant: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/),
  recipientRef: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/, 'an opaque recipient ref, never an address')
    .refine(noContact, 'an opaque recipient ref, never an address or a number'),
  channel: z.enum(['email', 'sms', '*']),
  reason: z
    .string()
    .trim()
    .min(3)
    .max(200)
    .refine(noContact, 'the reason looks like it holds an address or a phone number'),
});

/** The cancel command's own schema (lib/publish/cancelNotifications.ts), minus what the token decides. */
const CancelBody = CancelRequestSchema.pick({
  tenant: true,
  eventId: true,
  purpose: true,
  channel: true,
  reason: true,
});

type Route = {
  method: 'GET' | 'POST';
  path: string;
  role: Role;
  run: (request: ConsoleRequest, principal: Principal) => Promise<ConsoleResponse>;
};

const json = (status: number, value: unknown, extra: Record<string, string> = {}): ConsoleResponse => ({
  status,
  headers: { ...securityHeaders(), 'content-type': 'application/json; charset=utf-8', ...extra },
  body: JSON.stringify(value),
});

export const problem = (status: number, code: string, message: string, issues?: unknown): ConsoleResponse =>
  json(status, { error: code, message, ...(issues ? { issues } : {}) });

const zodIssues = (error: z.ZodError) =>
  error.issues.map((i) => ({ field: i.path.join('.') || '(body)', message: i.message }));

class BadRequest extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly issues?: unknown,
  ) {
    super(message);
  }
}

const parseWith = <T>(schema: z.ZodType<T>, value: unknown): T => {
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new BadRequest('invalid_request', 'the request is not valid', zodIssues(parsed.error));
  return parsed.data;
};

const parseBody = (request: ConsoleRequest): unknown => {
  if (!request.body) throw new BadRequest('invalid_request', 'a JSON body is required');
  if (Buffer.byteLength(request.body) > MAX_BODY_BYTES)
    throw new BadRequest('too_large', 'the body is too large');
  if (!(request.headers['content-type'] ?? '').startsWith('application/json'))
    throw new BadRequest('unsupported_media_type', 'send the body as application/json');
  try {
    return JSON.parse(request.body) as unknown;
  } catch {
    throw new BadRequest('invalid_json', 'the body is not valid JSON');
  }
};

/** Per-principal token bucket: `perMinute` rows, refilled continuously. One instance per process. */
class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
  ) {}
  take(principal: string, rows: number): boolean {
    const now = this.clock.now();
    const bucket = this.buckets.get(principal) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + ((now - bucket.at) / 60_000) * this.perMinute);
    bucket.at = now;
    this.buckets.set(principal, bucket);
    if (bucket.tokens < rows) return false;
    bucket.tokens -= rows;
    return true;
  }
}

const lastWhy = (row: DeliveryRecord): string | undefined => {
  for (let i = row.history.length - 1; i >= 0; i--) if (row.history[i]!.why) return row.history[i]!.why;
  return undefined;
};

/**
 * The operator console's HTTP API: one framework-free router over ConsoleRequest/ConsoleResponse, fed
 * by API Gateway (functions/console) and by node:http (`sendproof console`). Two roles:
 * - viewer: overview, attention lists, a notification's timeline, the suppression list, named queries.
 * - operator: additionally decisions (accepted / rejected / resend) through OperatorDecisions, single or
 *   bulk with one reason. The decider is the authenticated principal; a body cannot name one.
 * Every decision and every denied call is written to the audit log.
 */
export const createConsoleHandler = (deps: ConsoleDeps): ConsoleHandler => {
  const limiter = new RateLimiter(deps.decisionRowsPerMinute ?? 60, deps.clock);
  const audit = async (entry: Omit<AuditEntry, 'at'>) =>
    deps.auditLog.record({ at: new Date(deps.clock.now()).toISOString(), ...entry });
  const principalName = (p: Principal) => `${p.role}:${p.id}`;

  const view = (row: DeliveryRecord, now: number) => {
    const caps = deps.capabilities(row.transport, row.channel);
    const since = row.attnAt !== undefined && row.state !== 'retry_wait' ? row.attnAt : row.updatedAt;
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
      ageSeconds: Math.max(0, Math.round((now - since) / 1000)),
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

  const attention = async (request: ConsoleRequest) => {
    const q = parseWith(AttentionQuery, request.query);
    const now = deps.clock.now();
    // One attention index per list. `stalled` is the state the sweep writes when nothing can resume a
    // row (lib/reconcile/Sweeper.ts), not a guess from an age: an old `unknown` row still has its owner.
    const page = await deps.ledger.listAttention(q.list as DeliveryState, {
      limit: q.limit,
      ...(q.cursor ? { cursor: q.cursor } : {}),
    });
    const items: DeliveryRecord[] = page.items;
    const cursor = page.cursor;
    const minAgeMs = (q.minAgeSeconds ?? 0) * 1000;
    const filtered = items.filter(
      (row) =>
        (!q.tenant || row.tenant === q.tenant) &&
        (!q.purpose || row.purpose === q.purpose) &&
        (!q.channel || row.channel === q.channel) &&
        now - (row.attnAt ?? row.updatedAt) >= minAgeMs,
    );
    return json(200, {
      list: q.list as AttentionList,
      items: filtered.map((row) => view(row, now)),
      ...(cursor ? { cursor } : {}),
    });
  };

  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

  const runAudit = async (name: string, args: readonly string[]): Promise<AuditResult | undefined> => {
    if (!deps.audit) return undefined;
    return deps.audit.run(name, args);
  };

  const overview = async (request: ConsoleRequest) => {
    const now = deps.clock.now();
    const range = [day(now - 7 * 86_400_000), day(now)];
    // The archive is partitioned by tenant: the audit figures are one tenant's (the page names it).
    const tenant = parseWith(OverviewQuery, request.query).tenant;
    const [stats, dlqDepth, latency, manual, duplicates] = await Promise.all([
      deps.stats(),
      deps.dlqDepth ? deps.dlqDepth().catch(() => null) : Promise.resolve(null),
      runAudit('intent-to-accepted-latency', [tenant, ...range]),
      runAudit('manual-resolutions', [tenant, ...range]),
      runAudit('multiple-acceptances', [tenant, ...range]),
    ]);
    const settledManually = manual ? new Set(manual.rows.map((r) => String(r.dedupe_key))).size : null;
    const everUnknown = stats.byState;
    const decided =
      (everUnknown.resolved_accepted ?? 0) +
      (everUnknown.resolved_rejected ?? 0) +
      (everUnknown.superseded ?? 0);
    const settledByEvidenceOrWaiting = (everUnknown.unknown ?? 0) + (everUnknown.quarantined ?? 0);
    return json(200, {
      now: new Date(now).toISOString(),
      tenant,
      stats,
      dlqDepth,
      latency: latency ? latency.rows : null,
      latencyRange: range,
      duplicateAcceptances: duplicates ? duplicates.rows.length : null,
      manualDecisions7d: settledManually,
      /** Rows settled by an operator decision, of rows that are or were waiting for a human. */
      manualShare:
        decided + settledByEvidenceOrWaiting > 0 ? decided / (decided + settledByEvidenceOrWaiting) : null,
    });
  };

  const timeline = async (request: ConsoleRequest) => {
    const { key } = parseWith(TimelineQuery, request.query);
    const row = await deps.ledger.get(key, true);
    if (!row) return problem(404, 'not_found', 'no ledger row with this key');
    const now = deps.clock.now();
    const archive = await runAudit('explain-notification', [
      row.tenant,
      day(row.createdAt),
      day(now),
      key,
    ]).catch(() => undefined);
    const providerIds = [
      ...new Set([row.providerMessageId, ...row.history.map((h) => h.msg)].filter((v): v is string => !!v)),
    ];
    return json(200, {
      row: view(row, now),
      links: {
        resendOf: row.resendOf ?? null,
        supersededBy: row.supersededBy ?? null,
        exportBundle: deps.exportBundle ? `/api/export?${new URLSearchParams({ key })}` : null,
      },
      history: row.history.map((h, i) => ({
        version: i + 1,
        state: h.s,
        at: new Date(h.at).toISOString(),
        by: h.by,
        why: h.why ?? null,
        msg: h.msg ?? null,
        attempt: h.n ?? null,
      })),
      providerIds,
      evidence: {
        eventIds: row.evidenceIds ?? [],
        entries: row.history
          .filter((h) => h.by.startsWith('evidence:'))
          .map((h) => ({ state: h.s, at: new Date(h.at).toISOString(), by: h.by, why: h.why ?? null })),
      },
      archive: archive ? archive.rows : null,
    });
  };

  const decide = async (request: ConsoleRequest, principal: Principal) => {
    const body = parseWith(DecisionBody, parseBody(request));
    if (!limiter.take(principalName(principal), body.keys.length)) {
      await audit({
        kind: 'denied',
        principal: principalName(principal),
        method: request.method,
        path: request.path,
        sourceIp: request.sourceIp,
        status: 429,
        reason: 'rate_limited',
        outcome: body.outcome,
      });
      return problem(429, 'rate_limited', 'too many decisions; wait a minute', undefined);
    }
    const results = [];
    for (const key of body.keys) {
      try {
        const result = await deps.decisions.decide({
          dedupeKey: key,
          outcome: body.outcome,
          reason: body.reason,
          operator: principal.id,
          ...(body.intent ? { intent: body.intent } : {}),
          ...(body.decisionId ? { decisionId: body.decisionId } : {}),
        });
        results.push({ ok: true as const, ...result });
        await audit({
          kind: 'decision',
          principal: principalName(principal),
          method: request.method,
          path: request.path,
          sourceIp: request.sourceIp,
          status: 200,
          dedupeKey: key,
          outcome: body.outcome,
          decisionId: result.decisionId,
          result: result.state,
          reason: body.reason,
        });
      } catch (error) {
        const code =
          error instanceof DecisionRefusedError || error instanceof SendproofError ? error.code : 'internal';
        const message =
          error instanceof DecisionRefusedError || error instanceof SendproofError
            ? error.message
            : 'the decision could not be recorded';
        results.push({ dedupeKey: key, ok: false as const, error: code, message });
        await audit({
          kind: 'decision',
          principal: principalName(principal),
          method: request.method,
          path: request.path,
          sourceIp: request.sourceIp,
          status: 409,
          dedupeKey: key,
          outcome: body.outcome,
          result: `refused:${code}`,
          reason: body.reason,
        });
      }
    }
    return json(200, {
      decidedBy: `operator:${principal.id}`,
      recorded: results.filter((r) => r.ok).length,
      refused: results.filter((r) => !r.ok).length,
      results,
    });
  };

  const cancel = async (request: ConsoleRequest, principal: Principal) => {
    const body = parseWith(CancelBody, parseBody(request));
    if (!deps.cancel) return problem(501, 'not_configured', 'cancel is not configured for this console');
    const entry = {
      kind: 'decision' as const,
      principal: principalName(principal),
      method: request.method,
      path: request.path,
      sourceIp: request.sourceIp,
      outcome: 'cancel',
      reason: body.reason,
    };
    if (!limiter.take(principalName(principal), 1)) {
      await audit({ ...entry, kind: 'denied', status: 429, result: 'rate_limited' });
      return problem(429, 'rate_limited', 'too many decisions; wait a minute', undefined);
    }
    let report: CancelReport;
    try {
      report = await deps.cancel({ ...body, operator: principal.id, waitMs: 5_000 });
    } catch (error) {
      if (!(error instanceof SendproofError && error.kind === 'permanent')) throw error;
      await audit({ ...entry, status: 400, result: `refused:${error.code}` });
      return problem(400, error.code, error.message);
    }
    await audit({
      ...entry,
      status: 200,
      decisionId: report.order.id,
      result: `${body.tenant}:${body.eventId}:${report.committed ? 'committed' : 'already_committed'}:${report.rows.length}_rows`,
    });
    return json(200, {
      cancelledBy: `operator:${principal.id}`,
      tenant: report.tenant,
      eventId: report.eventId,
      committed: report.committed,
      committedAt: new Date(report.committedAt).toISOString(),
      rows: report.rows.map((r) => ({
        dedupeKey: r.dedupeKey,
        purpose: r.purpose,
        channel: r.channel,
        recipientRef: r.recipientRef,
        outcome: r.outcome,
      })),
    });
  };

  const routes: Route[] = [
    { method: 'GET', path: '/api/me', role: 'viewer', run: async (_r, p) => json(200, p) },
    { method: 'GET', path: '/api/overview', role: 'viewer', run: (request) => overview(request) },
    { method: 'GET', path: '/api/attention', role: 'viewer', run: (r) => attention(r) },
    { method: 'GET', path: '/api/timeline', role: 'viewer', run: (r) => timeline(r) },
    {
      method: 'GET',
      path: '/api/export',
      role: 'viewer',
      run: async (r) => {
        const { key } = parseWith(TimelineQuery, r.query);
        if (!deps.exportBundle)
          return problem(501, 'not_configured', 'no export bundle source is configured');
        const row = await deps.ledger.get(key, true);
        if (!row) return problem(404, 'not_found', 'no ledger row with this key');
        // The archive days the row can have transitions in: from its creation to today.
        const now = deps.clock.now();
        try {
          const bundle = await deps.exportBundle(key, {
            tenant: row.tenant,
            from: day(row.createdAt),
            to: day(now),
          });
          return json(200, bundle, {
            'content-disposition': `attachment; filename="sendproof-bundle-${row.idempotencyKey.slice(0, 16)}.json"`,
          });
        } catch (error) {
          if (error instanceof Error && error.message.startsWith('no archived transition'))
            return problem(404, 'not_archived', error.message);
          throw error;
        }
      },
    },
    {
      method: 'GET',
      path: '/api/suppressions',
      role: 'viewer',
      run: async () =>
        deps.suppressions
          ? json(200, { items: await deps.suppressions() })
          : problem(501, 'not_configured', 'no suppression table is configured'),
    },
    {
      method: 'GET',
      path: '/api/queries',
      role: 'viewer',
      run: async () =>
        deps.audit
          ? json(200, {
              items: deps.audit
                .list()
                .map(({ name, description, parameters }) => ({ name, description, parameters })),
            })
          : problem(501, 'not_configured', 'no audit archive is configured'),
    },
    {
      method: 'POST',
      path: '/api/queries/run',
      role: 'viewer',
      run: async (r) => {
        const body = parseWith(RunQueryBody, parseBody(r));
        if (!deps.audit) return problem(501, 'not_configured', 'no audit archive is configured');
        if (!deps.audit.list().some((q) => q.name === body.name))
          return problem(404, 'not_found', 'no named query with this name');
        try {
          const result = await deps.audit.run(body.name, body.args);
          return json(200, {
            columns: result.columns,
            rows: result.rows.slice(0, 1000),
            truncated: result.rows.length > 1000,
          });
        } catch (error) {
          if (error instanceof NamedQueryError) throw new BadRequest('invalid_arguments', error.message);
          if (error instanceof AuditQueryFailed) return problem(502, 'query_failed', error.message);
          throw error;
        }
      },
    },
    { method: 'POST', path: '/api/decisions', role: 'operator', run: (r, p) => decide(r, p) },
    { method: 'POST', path: '/api/cancel', role: 'operator', run: (r, p) => cancel(r, p) },
    {
      method: 'POST',
      path: '/api/suppressions',
      role: 'operator',
      run: async (r, p) => {
        const body = parseWith(SuppressBody, parseBody(r));
        if (!deps.suppressionList)
          return problem(501, 'not_configured', 'no suppression table is configured');
        const reason = `operator:${p.id}:${body.reason}`.slice(0, 240);
        await deps.suppressionList.suppress(body.tenant, body.recipientRef, body.channel, reason);
        await audit({
          kind: 'decision',
          principal: principalName(p),
          method: r.method,
          path: r.path,
          sourceIp: r.sourceIp,
          status: 200,
          outcome: 'suppress',
          result: `${body.tenant}:${body.recipientRef}:${body.channel}`,
          reason: body.reason,
        });
        return json(200, {
          suppressed: { tenant: body.tenant, recipientRef: body.recipientRef, channel: body.channel },
          by: `operator:${p.id}`,
        });
      },
    },
  ];

  /** The routes a role may call, for the contract tests and the page (buttons exist only for operators). */
  const handler: ConsoleHandler = async (request) => {
    try {
      if (request.method === 'OPTIONS') return { status: 204, headers: securityHeaders(), body: '' };
      const route =
        routes.find((r) => r.path === request.path && r.method === request.method) ??
        routes.find((r) => r.path === request.path);
      if (!route) {
        if (request.method === 'GET' && deps.staticFiles) {
          const file = await deps.staticFiles.get(request.path);
          if (file) return file;
        }
        return problem(404, 'not_found', 'no such route');
      }
      if (route.method !== request.method) return problem(405, 'method_not_allowed', `use ${route.method}`);
      // A browser on another origin may not call the API unless it is the console's own origin.
      const origin = request.headers.origin;
      if (origin && origin !== deps.allowedOrigin && origin !== `http://${request.headers.host ?? ''}`) {
        await audit({
          kind: 'denied',
          principal: 'anonymous',
          method: request.method,
          path: request.path,
          sourceIp: request.sourceIp,
          status: 403,
          reason: 'foreign_origin',
        });
        return problem(403, 'forbidden', 'this origin may not call the console API');
      }
      const auth = deps.authenticate(request);
      if (!auth.ok) {
        await audit({
          kind: 'denied',
          principal: auth.subject ? `unknown:${auth.subject}` : 'anonymous',
          method: request.method,
          path: request.path,
          sourceIp: request.sourceIp,
          status: auth.status,
          reason: auth.reason,
        });
        return auth.status === 401
          ? problem(401, 'unauthorized', 'a valid bearer token is required', undefined)
          : problem(403, 'forbidden', 'this identity has no console role');
      }
      if (!allows(auth.principal.role, route.role)) {
        await audit({
          kind: 'denied',
          principal: principalName(auth.principal),
          method: request.method,
          path: request.path,
          sourceIp: request.sourceIp,
          status: 403,
          reason: `needs_${route.role}`,
        });
        return problem(403, 'forbidden', `this call needs the ${route.role} role`);
      }
      return await route.run(request, auth.principal);
    } catch (error) {
      if (error instanceof BadRequest) return problem(400, error.code, error.message, error.issues);
      (deps.logError ?? defaultLogError)(error);
      return problem(500, 'internal', 'the console could not answer; see the server log');
    }
  };
  return handler;
};
