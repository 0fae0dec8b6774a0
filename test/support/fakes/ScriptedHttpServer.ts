import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, request, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** One request as the fake received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the fake does with one request. */
export type Behaviour =
  | { reply: number; headers?: Record<string, string>; body?: unknown }
  /** Reads the whole request, then destroys the socket without a byte of response. */
  | { destroyAfterRequest: true }
  /** Reads the whole request and never answers (until the server stops). */
  | { hang: true }
  /** Passes the request to a real server (e.g. aws-ses-v2-local) and relays its answer. */
  | { forwardTo: string };

export type Responder = (req: RecordedRequest) => Behaviour;

const unscripted: Responder = () => ({ reply: 500, body: { message: 'scripted fake: nothing scripted' } });

/**
 * A loopback HTTP server that answers from a script: queued behaviours first, then a default responder.
 * It records every request, so tests can assert what went over the wire (headers, tags, contexts).
 * Used to reproduce provider answers that the real emulators never produce.
 */
export class ScriptedHttpServer {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: Behaviour[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    private fallback: Responder,
  ) {}

  static async start(fallback: Responder = unscripted): Promise<ScriptedHttpServer> {
    let self: ScriptedHttpServer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const recorded: RecordedRequest = {
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        self!.handle(recorded, res);
      });
    });
    server.on('connection', (socket) => {
      self?.sockets.add(socket);
      socket.on('close', () => self?.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (!address || typeof address !== 'object') throw new Error('fake server has no address');
    self = new ScriptedHttpServer(server, `http://127.0.0.1:${address.port}`, fallback);
    return self;
  }

  /** The next requests get these behaviours, in order. */
  enqueue(...behaviours: Behaviour[]): this {
    this.queue.push(...behaviours);
    return this;
  }

  respondWith(fallback: Responder): this {
    this.fallback = fallback;
    return this;
  }

  jsonBodies<T = Record<string, unknown>>(): T[] {
    return this.requests.map((r) => JSON.parse(r.body) as T);
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: RecordedRequest, res: ServerResponse): void {
    this.requests.push(req);
    const behaviour = this.queue.shift() ?? this.fallback(req);
    if ('destroyAfterRequest' in behaviour) {
      res.socket?.destroy();
      return;
    }
    if ('hang' in behaviour) return;
    if ('forwardTo' in behaviour) {
      const target = new URL(req.path, behaviour.forwardTo);
      const upstream = request(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.end(req.body);
      return;
    }
    const { reply, headers = {}, body } = behaviour;
    const payload = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(reply, {
      'content-type': 'application/json',
      'x-amzn-requestid': randomUUID(),
      ...headers,
    });
    res.end(payload);
  }
}
