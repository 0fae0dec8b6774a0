import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import type { Principal, Role } from './auth.js';
import { type ConsoleRequest, type ConsoleResponse, MAX_BODY_BYTES } from './http.js';
import { securityHeaders } from './staticFiles.js';

/** One API route: method, path, the least role that may call it, and what it answers. */
export type Route = {
  method: 'GET' | 'POST';
  path: string;
  role: Role;
  run: (request: ConsoleRequest, principal: Principal) => Promise<ConsoleResponse>;
};

export const json = (
  status: number,
  value: unknown,
  extra: Record<string, string> = {},
): ConsoleResponse => ({
  status,
  headers: { ...securityHeaders(), 'content-type': 'application/json; charset=utf-8', ...extra },
  body: JSON.stringify(value),
});

export const problem = (status: number, code: string, message: string, issues?: unknown): ConsoleResponse =>
  json(status, { error: code, message, ...(issues ? { issues } : {}) });

const zodIssues = (error: z.core.$ZodError) =>
  error.issues.map((i) => ({ field: i.path.join('.') || '(body)', message: i.message }));

/** A request the console refuses with a 400 (the router turns it into a structured problem). */
export class BadRequest extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly issues?: unknown,
  ) {
    super(message);
    this.name = 'BadRequest';
  }
}

export const parseWith = <T>(schema: z.core.$ZodType<T>, value: unknown): T => {
  const parsed = z.safeParse(schema, value);
  if (!parsed.success)
    throw new BadRequest('invalid_request', 'the request is not valid', zodIssues(parsed.error));
  return parsed.data;
};

export const parseBody = (request: ConsoleRequest): unknown => {
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

/** `YYYY-MM-DD` (UTC) of an epoch-ms time: the archive's day partitions. */
export const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
