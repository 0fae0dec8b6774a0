import { auditRoutes } from './auditRoutes.js';
import { allows, type Principal } from './auth.js';
import { decisionRoutes } from './decisions.js';
import type { ConsoleDeps } from './deps.js';
import type { ConsoleRequest, ConsoleResponse } from './http.js';
import type { AuditEntry } from './ports.js';
import { readModelRoutes } from './readModels.js';
import { BadRequest, json, problem, type Route } from './respond.js';
import { securityHeaders } from './staticFiles.js';

export type { BundleExporter, ConsoleDeps } from './deps.js';
export { ATTENTION_LISTS } from './readModels.js';
export { problem } from './respond.js';

const defaultLogError = (error: unknown) =>
  process.stderr.write(
    `console: ${error instanceof Error ? `${error.name}: ${error.message}` : 'unexpected failure'}\n`,
  );

export type ConsoleHandler = (request: ConsoleRequest) => Promise<ConsoleResponse>;

/**
 * The operator console's HTTP API: one framework-free router over ConsoleRequest/ConsoleResponse, fed
 * by API Gateway (functions/console) and by node:http (`sendproof console`). The routes live by concern:
 * - readModels.ts (viewer): overview, attention lists, search, a notification's timeline, suppressions;
 * - auditRoutes.ts (viewer): the named audit queries and a notification's export bundle;
 * - decisions.ts (operator): decisions (accepted / rejected / resend), cancel, suppress.
 * Here: the origin check, authentication, the role check, and every denial written to the audit log.
 */
export const createConsoleHandler = (deps: ConsoleDeps): ConsoleHandler => {
  const audit = async (entry: Omit<AuditEntry, 'at'>) =>
    deps.auditLog.record({ at: new Date(deps.clock.now()).toISOString(), ...entry });
  const principalName = (p: Principal) => `${p.role}:${p.id}`;
  const routes: Route[] = [
    { method: 'GET', path: '/api/me', role: 'viewer', run: async (_r, p) => json(200, p) },
    ...readModelRoutes(deps),
    ...auditRoutes(deps),
    ...decisionRoutes(deps),
  ];

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
