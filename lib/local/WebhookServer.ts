import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendproofError } from '../domain/errors.js';
import { handleWebhook, type WebhookEndpointDeps } from '../evidence/WebhookEndpoint.js';

export interface RunningWebhookServer {
  /** e.g. http://127.0.0.1:43123 — POST /resend, /twilio, /sendgrid. */
  url: string;
  stop(): Promise<void>;
}

const MAX_BODY = 1_000_000;

const readBody = async (request: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new SendproofError('permanent', 'body_too_large', 'body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
};

/**
 * The local stack's evidence endpoint: the same handler as the Function URL Lambda, over node:http on
 * loopback. `publicUrl` is what providers (the simulator) were told to call, which Twilio's signature covers.
 */
export const startWebhookServer = async (
  deps: WebhookEndpointDeps,
  options: { port?: number; host?: string } = {},
): Promise<RunningWebhookServer> => {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((request, response) => {
    void (async () => {
      try {
        if (request.method !== 'POST') {
          response.writeHead(405).end();
          return;
        }
        const body = await readBody(request);
        const address = server.address() as AddressInfo;
        const path = (request.url ?? '/').split('?')[0] ?? '/';
        const headers = Object.fromEntries(
          Object.entries(request.headers).map(([k, v]) => [
            k.toLowerCase(),
            Array.isArray(v) ? v.join(',') : v,
          ]),
        );
        const result = await handleWebhook(deps, {
          provider: path.replace(/^\/+|\/+$/g, ''),
          url: `http://${host}:${address.port}${request.url ?? '/'}`,
          headers,
          body,
        });
        response.writeHead(result.status, { 'content-type': 'application/json' }).end(result.body);
      } catch (error) {
        deps.logger?.warn('webhook failed', { error: error instanceof Error ? error.name : 'unknown' });
        response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal"}');
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
};
