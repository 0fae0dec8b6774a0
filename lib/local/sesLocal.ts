import type { Server } from 'node:http';
import { freePort } from './ports.js';

/**
 * LOCAL ONLY. aws-ses-v2-local (the SES v2 emulator with a web inbox), started on a free loopback port:
 * one start for `npm start` (lib/local/LocalStack.ts) and the tests that send real SES requests.
 */
export interface RunningSesLocal {
  /** http://127.0.0.1:<port>: the SES v2 API and the inbox. */
  url: string;
  stop(): Promise<void>;
}

type StartSesLocal = (config: { host: string; port: number }) => Promise<Server>;

/**
 * The package is CommonJS compiled from ESM (`exports.default`): depending on the loader (Node's own
 * import, tsx, Vite) the start function is the namespace's `default` or that object's `default`.
 */
const startFunction = (namespace: unknown): StartSesLocal => {
  let candidate = namespace;
  for (let depth = 0; depth < 3 && typeof candidate !== 'function'; depth++)
    candidate = (candidate as { default?: unknown } | undefined)?.default;
  if (typeof candidate !== 'function') throw new Error('aws-ses-v2-local exports no start function');
  return candidate as StartSesLocal;
};

/** Starts aws-ses-v2-local. Imported on demand: a dev-time server. */
export const startSesLocal = async (): Promise<RunningSesLocal> => {
  const start = startFunction(await import('aws-ses-v2-local'));
  const port = await freePort();
  const server = await start({ host: '127.0.0.1', port });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
