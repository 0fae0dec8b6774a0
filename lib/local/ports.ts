import { createServer } from 'node:net';
import { SendproofError } from '../domain/errors.js';

/** Asks the kernel for a free TCP port on loopback. The port is released before it is returned. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the port the kernel assigned'));
      });
    });
  });

/** Polls `probe` until it resolves true or `timeoutMs` elapses. */
export const waitFor = async (
  probe: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      if (await probe()) return;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new SendproofError(
    'retryable',
    'not_ready',
    `${what} did not become ready within ${timeoutMs} ms${lastError ? `: ${String(lastError)}` : ''}`,
    lastError === undefined ? undefined : { cause: lastError },
  );
};
