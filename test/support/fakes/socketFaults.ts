import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { constants } from 'node:os';

/**
 * The error Node raises when the kernel fails a socket call, e.g. `read EHOSTUNREACH` (code, errno, syscall).
 * What an ICMP host-unreachable recorded while TCP retransmits an established connection looks like.
 */
export const systemError = (
  code: keyof typeof constants.errno | 'ENOTFOUND',
  syscall: string,
): NodeJS.ErrnoException =>
  Object.assign(new Error(`${syscall} ${code}`), {
    code,
    // getaddrinfo's ENOTFOUND is not an errno; Node reports it with errno -3008 (EAI_NONAME).
    errno: code === 'ENOTFOUND' ? -3008 : -constants.errno[code],
    syscall,
  });

/**
 * Route failures cannot be provoked on loopback without NET_ADMIN, so this injects the kernel's error
 * into the real client socket of a real connection: it watches every client socket this process opens
 * (the `net.client.socket` diagnostics channel, which the HTTP agents and the AWS SDK go through), and a
 * test fails one of them the way the kernel would, at the moment it chooses.
 */
export class ClientSocketFaults {
  private readonly sockets = new Set<Socket>();
  private failNext?: NodeJS.ErrnoException;
  private readonly onSocket = (message: unknown): void => {
    const { socket } = message as { socket: Socket };
    const pending = this.failNext;
    if (pending) {
      // Before connect() completes: the request has not had a chance to be written.
      this.failNext = undefined;
      process.nextTick(() => socket.destroy(pending));
      return;
    }
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  };

  start(): this {
    subscribe('net.client.socket', this.onSocket);
    return this;
  }

  stop(): void {
    unsubscribe('net.client.socket', this.onSocket);
  }

  /** The next client socket fails while connecting, as connect() reports `code`. */
  failNextConnect(code: keyof typeof constants.errno): void {
    this.failNext = systemError(code, 'connect');
  }

  /** Fails the client end of the connection a server accepted as `serverSide`, as a read reports `code`. */
  failPeerOf(serverSide: Socket, code: keyof typeof constants.errno): void {
    const peer = [...this.sockets].find(
      (s) => s.localPort === serverSide.remotePort && s.remotePort === serverSide.localPort,
    );
    if (!peer) throw new Error(`no client socket on port ${serverSide.remotePort}`);
    peer.destroy(systemError(code, 'read'));
  }
}

/**
 * A loopback HTTP server that reads each whole request, counts it, and then never answers: instead
 * `onRequest` decides what happens to the connection (reset it, fail the client's socket).
 */
export const startReadingServer = async (
  onRequest: (socket: Socket) => void,
): Promise<{ url: string; received: () => number; stop: () => Promise<void> }> => {
  let received = 0;
  const server: Server = createServer((req) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      onRequest(req.socket);
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => received,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
