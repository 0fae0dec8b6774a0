import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import type { Clock } from '../domain/clock.js';
import { SendproofError } from '../domain/errors.js';
import { type CancelReport, CancelRequestSchema } from '../publish/cancelNotifications.js';
import { DecisionRefusedError } from '../reconcile/OperatorDecisions.js';
import type { Principal } from './auth.js';
import type { ConsoleDeps } from './deps.js';
import type { ConsoleRequest } from './http.js';
import type { AuditEntry } from './ports.js';
import { json, parseBody, parseWith, problem, type Route } from './respond.js';

/**
 * The operator's writes: decisions on rows (accepted / rejected / resend, one or up to 50 with one
 * reason), cancel by business identity, and adding a suppression. The decider is always the
 * authenticated principal; a body cannot name one. Each is rate-limited per principal and audited.
 */

const MAX_BULK = 50;

const DecisionBody = z
  .strictObject({
    keys: z
      .array(z.string().check(z.minLength(1), z.maxLength(1024)))
      .check(z.minLength(1), z.maxLength(MAX_BULK)),
    outcome: z.enum(['accepted', 'rejected', 'resend']),
    reason: z.string().check(z.trim(), z.minLength(3), z.maxLength(200)),
    /** `resend` of a single row only: the new intent (the ledger never kept the addresses). */
    intent: z.optional(z.record(z.string(), z.unknown())),
    decisionId: z.optional(z.string().check(z.maxLength(128))),
  })
  .check(
    z.refine((b) => new Set(b.keys).size === b.keys.length, {
      message: 'keys must be distinct',
      path: ['keys'],
    }),
    z.refine((b) => b.outcome !== 'resend' || b.keys.length === 1, {
      message: 'resend takes one row at a time: each needs its own new intent',
      path: ['keys'],
    }),
  );

/** An address or a phone number must never become a suppression key or reason. */
const LOOKS_LIKE_CONTACT = /[^\s@]+@[^\s@]+|\+\d[\d\s().-]{6,}\d|\d{10,}/;
const noContact = (value: string) => !LOOKS_LIKE_CONTACT.test(value);

const SuppressBody = z.strictObject({
  tenant: z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/)),
  recipientRef: z
    .string()
    .check(
      z.regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/, 'an opaque recipient ref, never an address'),
      z.refine(noContact, 'an opaque recipient ref, never an address or a number'),
    ),
  channel: z.enum(['email', 'sms', '*']),
  reason: z
    .string()
    .check(
      z.trim(),
      z.minLength(3),
      z.maxLength(200),
      z.refine(noContact, 'the reason looks like it holds an address or a phone number'),
    ),
});

/** The cancel command's own schema (lib/publish/cancelNotifications.ts), minus what the token decides. */
const CancelBody = z.pick(CancelRequestSchema, {
  tenant: true,
  eventId: true,
  purpose: true,
  channel: true,
  reason: true,
});

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

export const decisionRoutes = (deps: ConsoleDeps): Route[] => {
  const limiter = new RateLimiter(deps.decisionRowsPerMinute ?? 60, deps.clock);
  const audit = async (entry: Omit<AuditEntry, 'at'>) =>
    deps.auditLog.record({ at: new Date(deps.clock.now()).toISOString(), ...entry });
  const principalName = (p: Principal) => `${p.role}:${p.id}`;

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

  return [
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
};
