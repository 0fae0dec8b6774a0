import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/**
 * The one request/response shape the console handler works on. Two adapters feed it: an API Gateway
 * HTTP API (payload v2) Lambda event and a node:http request. Header names are lower case.
 */
export interface ConsoleRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: string;
  sourceIp: string;
  /**
   * Claims of a JWT that API Gateway's authorizer already verified (Lambda only). The node adapter never
   * sets this: locally the bearer token itself is checked by the handler.
   */
  verifiedClaims?: Record<string, unknown>;
}

export interface ConsoleResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

/** A request body larger than this is refused before parsing (decisions and queries are small). */
export const MAX_BODY_BYTES = 64 * 1024;

const lowerCaseHeaders = (headers: Record<string, string | string[] | undefined>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : (v as string)]),
  );

export const fromApiGatewayEvent = (event: APIGatewayProxyEventV2WithJWTAuthorizer): ConsoleRequest => {
  const body =
    event.body === undefined
      ? undefined
      : event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body;
  const claims = event.requestContext.authorizer?.jwt?.claims;
  return {
    method: event.requestContext.http.method.toUpperCase(),
    path: event.rawPath,
    query: Object.fromEntries(
      Object.entries(event.queryStringParameters ?? {}).filter(([, v]) => v !== undefined),
    ) as Record<string, string>,
    headers: lowerCaseHeaders(event.headers ?? {}),
    ...(body !== undefined ? { body } : {}),
    sourceIp: event.requestContext.http.sourceIp,
    ...(claims ? { verifiedClaims: claims as Record<string, unknown> } : {}),
  };
};

export const toApiGatewayResult = (response: ConsoleResponse): APIGatewayProxyStructuredResultV2 => ({
  statusCode: response.status,
  headers: response.headers,
  ...(typeof response.body === 'string'
    ? { body: response.body }
    : { body: response.body.toString('base64'), isBase64Encoded: true }),
});

export class BodyTooLargeError extends Error {}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BodyTooLargeError('body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

export const fromNodeRequest = async (req: IncomingMessage): Promise<ConsoleRequest> => {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await readBody(req);
  return {
    method: (req.method ?? 'GET').toUpperCase(),
    path: url.pathname,
    query: Object.fromEntries(url.searchParams.entries()),
    headers: lowerCaseHeaders(req.headers),
    ...(body !== undefined && body.length > 0 ? { body } : {}),
    sourceIp: req.socket.remoteAddress ?? 'unknown',
  };
};

export const writeNodeResponse = (res: ServerResponse, response: ConsoleResponse): void => {
  res.writeHead(response.status, response.headers);
  res.end(response.body);
};
