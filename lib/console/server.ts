import { createServer, type Server } from 'node:http';
import type { ConsoleHandler } from './ConsoleApi.js';
import { problem } from './ConsoleApi.js';
import { BodyTooLargeError, fromNodeRequest, writeNodeResponse } from './http.js';

export interface RunningConsoleServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Serves the console handler over node:http on loopback only (a random free port unless one is given). */
export const startConsoleServer = async (
  handler: ConsoleHandler,
  options: { host?: string; port?: number } = {},
): Promise<RunningConsoleServer> => {
  const host = options.host ?? '127.0.0.1';
  const server: Server = createServer((req, res) => {
    fromNodeRequest(req)
      .then(handler)
      .then(
        (response) => writeNodeResponse(res, response),
        (error: unknown) =>
          writeNodeResponse(
            res,
            error instanceof BodyTooLargeError
              ? problem(413, 'too_large', 'the body is too large')
              : problem(400, 'bad_request', 'the request could not be read'),
          ),
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://${host}:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
