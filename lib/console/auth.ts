import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ConsoleRequest } from './http.js';

export type Role = 'viewer' | 'operator';

/** Who is calling. `id` is what a decision records (`operator:<id>`): an identifier, never an address. */
export interface Principal {
  id: string;
  role: Role;
}

export type Authentication =
  | { ok: true; principal: Principal }
  | { ok: false; status: 401 | 403; reason: string; subject?: string };

export type Authenticator = (request: ConsoleRequest) => Authentication;

/** `operator` may do everything `viewer` may. */
export const allows = (role: Role, needed: Role): boolean => needed === 'viewer' || role === 'operator';

const bearer = (request: ConsoleRequest): string | undefined => {
  const header = request.headers.authorization;
  const match = header ? /^Bearer\s+([A-Za-z0-9._~+/=-]{16,4096})$/.exec(header.trim()) : null;
  return match?.[1];
};

const digest = (token: string): Buffer => createHash('sha256').update(token).digest();

/** A fresh random bearer token (URL-safe, 32 bytes of entropy). */
export const newToken = (): string => randomBytes(32).toString('base64url');

/**
 * Local tokens: the console prints each token once; only their SHA-256 digests are kept, compared in
 * constant time. Each token maps to one principal.
 */
export const staticTokenAuthenticator = (
  tokens: ReadonlyArray<{ token: string; principal: Principal }>,
): Authenticator => {
  const known = tokens.map(({ token, principal }) => ({ hash: digest(token), principal }));
  return (request) => {
    const token = bearer(request);
    if (!token) return { ok: false, status: 401, reason: 'missing_bearer_token' };
    const hash = digest(token);
    const match = known.find((k) => timingSafeEqual(k.hash, hash));
    return match
      ? { ok: true, principal: match.principal }
      : { ok: false, status: 401, reason: 'unknown_token' };
  };
};

/** HTTP API passes `cognito:groups` as a JSON-ish array string (`[operator viewer]`) or as an array. */
export const groupsOf = (claim: unknown): string[] => {
  if (Array.isArray(claim)) return claim.map(String);
  if (typeof claim !== 'string') return [];
  const trimmed = claim.trim();
  if (trimmed.startsWith('[') && trimmed.endsWith(']')) {
    const inner = trimmed.slice(1, -1).trim();
    if (inner.startsWith('"')) {
      try {
        return (JSON.parse(trimmed) as unknown[]).map(String);
      } catch {
        return [];
      }
    }
    return inner.split(/[\s,]+/).filter(Boolean);
  }
  return trimmed.split(/[\s,]+/).filter(Boolean);
};

const SUBJECT = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/;

/**
 * Behind API Gateway's JWT authorizer (Cognito): the token's signature, issuer, audience and expiry were
 * checked before the Lambda ran; here only the verified claims are read. The principal is the token's
 * `sub` (a UUID, never the e-mail address), the role comes from the `operator` / `viewer` groups.
 */
export const jwtClaimsAuthenticator = (): Authenticator => (request) => {
  const claims = request.verifiedClaims;
  if (!claims) return { ok: false, status: 401, reason: 'no_verified_token' };
  const sub = typeof claims.sub === 'string' ? claims.sub : '';
  if (!SUBJECT.test(sub)) return { ok: false, status: 401, reason: 'bad_subject' };
  const groups = groupsOf(claims['cognito:groups']);
  const role: Role | undefined = groups.includes('operator')
    ? 'operator'
    : groups.includes('viewer')
      ? 'viewer'
      : undefined;
  if (!role) return { ok: false, status: 403, reason: 'no_console_group', subject: sub };
  return { ok: true, principal: { id: sub, role } };
};
