import type { Server } from 'node:http';
import sesLocalModule from 'aws-ses-v2-local';
import { freePort } from '../../../lib/local/ports.js';

type StartSesLocal = (config: { host: string; port: number }) => Promise<Server>;

/**
 * aws-ses-v2-local is CommonJS with `exports.default`: Node's ESM loader hands us module.exports, while
 * Vite's interop hands us the function itself. Accept both.
 */
const startFn = (): StartSesLocal => {
  const candidate = sesLocalModule as unknown as StartSesLocal | { default: StartSesLocal };
  return typeof candidate === 'function' ? candidate : candidate.default;
};

/** Starts the real SES v2 emulator on a free loopback port. */
export const startSesLocal = async (): Promise<{ url: string; stop(): Promise<void> }> => {
  const port = await freePort();
  const server = await startFn()({ host: '127.0.0.1', port });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
