import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../../lib/domain/errors.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { classifyExchangeFailure } from '../../../lib/transports/classify.js';
import { exchange, KEEP_ALIVE_IDLE_MS } from '../../../lib/transports/HttpExchange.js';
import { RestTransport } from '../../../lib/transports/RestTransport.js';
import { errorToken } from '../../../lib/transports/wire.js';
import { emailMessage } from '../../support/fakes/outbound.js';

// Real sockets on 127.0.0.1: a peer that accepts and never reads, and the provider simulator.
let stalled: Server;
const sockets = new Set<Socket>();
let stalledPort: number;
let sim: RunningProviderSimulator;
beforeAll(async () => {
  stalled = createServer((socket) => {
    sockets.add(socket);
    socket.pause();
  });
  await new Promise<void>((r) => stalled.listen(0, '127.0.0.1', () => r()));
  stalledPort = (stalled.address() as { port: number }).port;
  sim = await startProviderSimulator();
});
afterAll(async () => {
  // A paused socket never reads the client's FIN, so close() would wait for it forever: end them here.
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((r) => stalled.close(() => r()));
  await sim.stop();
});

describe('transport hardening', () => {
  it('a peer that accepts the connection and stops reading is a send timeout: never processed, retryable', async () => {
    // Prepare: a body far larger than the socket buffers, so the request cannot finish
    const body = 'x'.repeat(32 * 1024 * 1024);
    // Act
    const outcome = await exchange({
      method: 'POST',
      url: `http://127.0.0.1:${stalledPort}/v1/email/send`,
      headers: { 'content-type': 'text/plain' },
      body,
      sendTimeoutMs: 300,
    });
    // Assess
    expect(outcome).toEqual({ kind: 'failure', stage: 'send', code: 'ESENDTIMEOUT' });
    if (outcome.kind === 'failure') expect(classifyExchangeFailure(outcome).kind).toBe('retryable');
  });

  it('credentials that cannot be fetched mean the request never left: retryable, not an ambiguous send', async () => {
    // Prepare
    const transport = new RestTransport({
      baseUrl: sim.url,
      channel: 'email',
      apiKey: async () => {
        throw new ConfigurationError('provider secret has no restApiKey');
      },
    });
    // Act
    const result = await transport.send(emailMessage(), 'k'.repeat(64));
    const lookup = await transport.lookup('k'.repeat(64));
    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'credentials_unavailable:ConfigurationError' });
    expect(lookup).toEqual({ kind: 'unavailable', reason: 'credentials_unavailable:ConfigurationError' });
    expect(sim.requests()).toHaveLength(0);
  });

  it('a provider error name that is free text (it may echo the address) is recorded as the HTTP status only', () => {
    expect(errorToken('invalid_destination', 422)).toBe('invalid_destination');
    expect(errorToken('invalid recipient bob@example.com', 422)).toBe('http_422');
    expect(errorToken({ nested: 'x' }, 500)).toBe('http_500');
    expect(errorToken('x'.repeat(65), 400)).toBe('http_400');
  });
});

describe('connection reuse (issue 27: HTTP keep-alive)', () => {
  it('back-to-back requests share one connection; one idle past KEEP_ALIVE_IDLE_MS is never reused', async () => {
    // Prepare: a plain HTTP server that counts the connections it accepts (default keep-alive 5 s)
    const connections: Socket[] = [];
    const server = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    server.on('connection', (socket: Socket) => connections.push(socket));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1/ping`;
    try {
      // Act
      for (let i = 0; i < 3; i++)
        expect(await exchange({ method: 'GET', url })).toMatchObject({ status: 200 });
      const afterBurst = connections.length;
      await new Promise((r) => setTimeout(r, KEEP_ALIVE_IDLE_MS + 300));
      const idleClosed = connections[0]!.destroyed || connections[0]!.readableEnded;
      expect(await exchange({ method: 'GET', url })).toMatchObject({ status: 200 });
      // Assess
      expect(afterBurst).toBe(1);
      expect(idleClosed).toBe(true);
      expect(connections.length).toBe(2);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
