import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { readJson } from './wire.js';

/**
 * How far a request got before it failed. This is what separates "retry freely" from "maybe sent":
 *
 *   connect ──(socket connected)──► send ──(last byte handed to the kernel)──► response
 *   DNS, refused, connect timeout     partial write: the server never        reset, hang-up, response
 *   → the request never left          had a whole request                    timeout → it may have run
 */
export type ExchangeStage = 'connect' | 'send' | 'response';

export interface ExchangeRequest {
  method: 'GET' | 'POST';
  url: string;
  headers?: Readonly<Record<string, string>>;
  body?: string | Uint8Array;
  /** Time allowed to open the connection (DNS + TCP + TLS). Default 3 s. */
  connectTimeoutMs?: number;
  /** Time allowed from the connection to the last byte of the request (a peer that stops reading). Default 10 s. */
  sendTimeoutMs?: number;
  /** Time allowed from the last byte sent to the last byte of the response. Default 10 s. */
  responseTimeoutMs?: number;
}

export type ExchangeOutcome =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: string }
  | { kind: 'failure'; stage: ExchangeStage; code: string };

export interface ExchangeTimeouts {
  connectTimeoutMs?: number;
  sendTimeoutMs?: number;
  responseTimeoutMs?: number;
}

/**
 * How long a connection may sit idle in the pool before it is closed. Keep-alive saves a TCP (and TLS)
 * handshake per send, which was the largest single cost of a notification in a CPU profile of the
 * throughput benchmark (docs/benchmark.md). Its risk is a stale socket: one the server closed while it
 * sat idle fails after the request was written, like a provider dying mid-request, and that send would
 * end `unknown` (never a false outcome: the stage rules below still apply, so it costs a reconcile, not
 * a wrong answer). Servers close idle connections only after their own keep-alive timeout (Node's
 * default is 5 s, load balancers' 60 s), so a pooled socket is closed here after 1 s idle: a socket is
 * only reused while the server still holds it open. A server that closes a connection on purpose says
 * so with `Connection: close` on its last response, and Node then does not pool the socket.
 */
export const KEEP_ALIVE_IDLE_MS = 1_000;
const agents = {
  http: new HttpAgent({ keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS }),
  https: new HttpsAgent({ keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS }),
};

/**
 * One HTTP request on a pooled keep-alive connection (see KEEP_ALIVE_IDLE_MS), reporting the stage at
 * which it failed. Never throws. A reused socket is connected already, so its request starts at `send`.
 */
export const exchange = (spec: ExchangeRequest): Promise<ExchangeOutcome> =>
  new Promise((resolve) => {
    const url = new URL(spec.url);
    const secure = url.protocol === 'https:';
    const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
    let stage: ExchangeStage = 'connect';
    let settled = false;
    let connectTimer: NodeJS.Timeout | undefined;
    let sendTimer: NodeJS.Timeout | undefined;
    let responseTimer: NodeJS.Timeout | undefined;

    const settle = (outcome: ExchangeOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      clearTimeout(sendTimer);
      clearTimeout(responseTimer);
      resolve(outcome);
    };
    // Only the error code travels on: a provider's or the OS's message text is never needed to classify.
    const fail = (code: string) => {
      settle({ kind: 'failure', stage, code });
      req.destroy();
    };

    const req = (secure ? httpsRequest : httpRequest)(url, {
      method: spec.method,
      agent: secure ? agents.https : agents.http,
      headers: {
        ...spec.headers,
        ...(body ? { 'content-length': String(body.byteLength) } : {}),
      },
    });

    connectTimer = setTimeout(() => fail('ECONNECTTIMEOUT'), spec.connectTimeoutMs ?? 3_000);
    req.on('socket', (socket) => {
      const connected = () => {
        clearTimeout(connectTimer);
        if (stage !== 'connect') return;
        stage = 'send';
        // A peer that accepts the connection and stops reading must not hold the call: the request is
        // incomplete, so it was never processed (retryable, not ambiguous).
        sendTimer = setTimeout(() => fail('ESENDTIMEOUT'), spec.sendTimeoutMs ?? 10_000);
      };
      if (socket.connecting) socket.once(secure ? 'secureConnect' : 'connect', connected);
      // A socket that failed before it connected is not connected: its error reports the connect stage.
      else if (!socket.destroyed) connected();
    });
    req.on('finish', () => {
      // The response may already have settled the exchange (a server that answers early).
      if (settled) return;
      // The write callback ran: every byte of the request is in the kernel's hands.
      clearTimeout(connectTimer);
      clearTimeout(sendTimer);
      stage = 'response';
      responseTimer = setTimeout(() => fail('ERESPONSETIMEOUT'), spec.responseTimeoutMs ?? 10_000);
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      settle({ kind: 'failure', stage, code: error.code ?? 'EUNKNOWN' });
    });
    req.on('response', (res) => {
      stage = 'response';
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        settle({
          kind: 'response',
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
      res.on('aborted', () => fail('ECONNRESET'));
      res.on('error', (error: NodeJS.ErrnoException) => fail(error.code ?? 'EUNKNOWN'));
    });
    req.end(body);
  });

/** The answer of a provider lookup GET: the parsed JSON, or why there is none. */
export type LookupGet =
  | { kind: 'ok'; json: unknown }
  | { kind: 'not_found' }
  | { kind: 'unavailable'; reason: string };

/**
 * One lookup GET, mapped the same way for every provider: connection failure or a non-200 answer is
 * `unavailable` (ask again later), 404 is `not_found`, a body that is not JSON is `unavailable`.
 */
export const lookupGet = async (
  url: string,
  headers: Record<string, string>,
  timeouts: ExchangeTimeouts = {},
): Promise<LookupGet> => {
  const outcome = await exchange({ method: 'GET', url, headers, ...timeouts });
  if (outcome.kind === 'failure') return { kind: 'unavailable', reason: `lookup_failed:${outcome.code}` };
  if (outcome.status === 404) return { kind: 'not_found' };
  if (outcome.status !== 200) return { kind: 'unavailable', reason: `lookup_http_${outcome.status}` };
  const json = readJson<unknown>(outcome.body);
  return json === undefined ? { kind: 'unavailable', reason: 'lookup_unreadable' } : { kind: 'ok', json };
};
