import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type OutcomeEvent, OutcomeEventSchemaV1 } from './outcomeEvent.js';

export interface ReceivedEvent {
  event: OutcomeEvent;
  /** True when an event with this id was received before (a redelivery): a deduplicating caller ignores it. */
  duplicate: boolean;
}

export interface RunningEventReceiver {
  url: string;
  /** Every event received, in arrival order, duplicates included (flagged). */
  received: ReceivedEvent[];
  /** The events a deduplicating caller keeps: the first of each id. */
  unique(): OutcomeEvent[];
  stop(): Promise<void>;
}

const bodyOf = (request: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });

/**
 * A calling service's endpoint, for the local stack and tests: accepts POSTed outcome events, validates
 * each against the v1 schema (400 otherwise), deduplicates on `id` as a careful consumer would, and
 * answers 200. Loopback only, on a free port unless one is given.
 */
export const startEventReceiver = async (
  options: { port?: number; onEvent?: (received: ReceivedEvent) => void; status?: () => number } = {},
): Promise<RunningEventReceiver> => {
  const received: ReceivedEvent[] = [];
  const seen = new Set<string>();
  const server: Server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'POST') {
        response.writeHead(405).end();
        return;
      }
      const forced = options.status?.();
      if (forced && forced !== 200) {
        response.writeHead(forced).end();
        return;
      }
      let parsed: ReturnType<typeof OutcomeEventSchemaV1.safeParse>;
      try {
        parsed = OutcomeEventSchemaV1.safeParse(JSON.parse(await bodyOf(request)));
      } catch {
        response.writeHead(400).end('not JSON');
        return;
      }
      if (!parsed.success) {
        response.writeHead(400).end('not an outcome event v1');
        return;
      }
      const entry = { event: parsed.data, duplicate: seen.has(parsed.data.id) };
      seen.add(parsed.data.id);
      received.push(entry);
      options.onEvent?.(entry);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    })();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    received,
    unique: () => received.filter((r) => !r.duplicate).map((r) => r.event),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};
