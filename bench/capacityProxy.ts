import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HOLD_PREFIX } from '../lib/rate/TransportHolds.js';
import type { ReadRequestLog } from './billing.js';

/**
 * Metering proxies for the capacity model (bench/capacity*.ts). Code under test is pointed at the proxy's
 * endpoint instead of the server's, so every request any function makes is seen, whichever client made
 * it and whatever it asked for itself:
 *
 *   DynamoDB  every read and write gets `ReturnConsumedCapacity: INDEXES`; the answer's units are summed
 *             per table and per global secondary index, reads and writes apart, per operation. A refused
 *             conditional write carries no capacity in its error; AWS charges the table 1 write unit for
 *             an item up to 1 KB, so it is counted as 1 (as harness/CapacityMeter.ts does).
 *   SQS       requests by action (JSON protocol, `X-Amz-Target: AmazonSQS.<Action>`), a ReceiveMessage
 *             that returned nothing counted apart (empty receives follow the pollers, not the traffic).
 *
 * DynamoDB Local and fauxqs do not check signatures, so the rewritten body needs no new one. Response
 * bodies pass through unchanged (the SDK checks DynamoDB's CRC32 of them).
 */

export interface Use {
  readUnits: number;
  writeUnits: number;
  readRequests: number;
  writeRequests: number;
}

export const emptyUse = (): Use => ({ readUnits: 0, writeUnits: 0, readRequests: 0, writeRequests: 0 });

export const addUse = (a: Use, b: Use, scale = 1): Use => ({
  readUnits: a.readUnits + b.readUnits * scale,
  writeUnits: a.writeUnits + b.writeUnits * scale,
  readRequests: a.readRequests + b.readRequests * scale,
  writeRequests: a.writeRequests + b.writeRequests * scale,
});

/** Per resource: `<table>` or `<table>/<index>` (the model renames tables to their role). */
export type UseByResource = Record<string, Use>;

export interface DynamoTotals {
  /** Every operation but the batch-level ones below. */
  byResource: UseByResource;
  /** BatchGetItem apart: the dispatcher reads a whole queue batch's gate facts with one. */
  batchGets: UseByResource;
  /** Write units that put a row into an attention partition, by the state it entered (`unknown`, …). */
  attentionWritesByState: Record<string, number>;
  requestsByOperation: Record<string, number>;
  /**
   * Every read request: keys asked, items found, consistency, the units DynamoDB Local reported. Local
   * reports 0 units for a key it did not find; AWS bills it (bench/billing.ts billedReadUnits).
   */
  readLog: ReadRequestLog[];
  /**
   * The transport-hold gate's reads (GetItem of `hold#<transport>`, lib/rate/TransportHolds.ts `check`),
   * also counted in `byResource`: the gate caches a clear answer per process for a refresh period, so
   * these are paid per environment and period, not per record. When, which item, what it cost.
   */
  holdReads: Array<{ at: number; table: string; key: string; readUnits: number }>;
}

export interface SqsTotals {
  byAction: Record<string, number>;
  emptyReceives: number;
  /** Messages the non-empty receives returned. */
  receivedMessages: number;
}

const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

export const emptyDynamoTotals = (): DynamoTotals => ({
  byResource: {},
  batchGets: {},
  attentionWritesByState: {},
  requestsByOperation: {},
  readLog: [],
  holdReads: [],
});

const bump = (map: UseByResource, resource: string, use: Partial<Use>): void => {
  const current = map[resource] ?? emptyUse();
  map[resource] = addUse(current, { ...emptyUse(), ...use });
};

interface Capacity {
  TableName?: string;
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

/** The attention partition a write puts an item in (`unknown#2` → `unknown`), when the request names one. */
const attentionStateOf = (body: Record<string, unknown>): string | undefined => {
  const seen = JSON.stringify(body.Item ?? body.ExpressionAttributeValues ?? {});
  const match = /"attn":\{"S":"([a-z_]+)(?:#\d+)?"\}|"S":"([a-z_]+)#\d+"/.exec(seen);
  return match?.[1] ?? match?.[2];
};

/** Keys asked, items found and consistency of one successful read (bench/billing.ts bills it). */
const readLogOf = (
  operation: string,
  input: Record<string, unknown>,
  output: Record<string, unknown>,
  capacities: Capacity[],
): ReadRequestLog => {
  const reportedUnits = capacities.reduce(
    (sum, c) => sum + (c.Table?.CapacityUnits ?? c.CapacityUnits ?? 0),
    0,
  );
  if (operation === 'BatchGetItem') {
    const requested = (input.RequestItems ?? {}) as Record<
      string,
      { Keys?: unknown[]; ConsistentRead?: boolean }
    >;
    const responses = (output.Responses ?? {}) as Record<string, unknown[]>;
    const tables = Object.values(requested);
    return {
      operation,
      consistent: tables.every((t) => t.ConsistentRead === true),
      keys: tables.reduce((sum, t) => sum + (t.Keys?.length ?? 0), 0),
      found: Object.values(responses).reduce((sum, items) => sum + items.length, 0),
      reportedUnits,
    };
  }
  if (operation === 'TransactGetItems') {
    const items = (input.TransactItems ?? []) as unknown[];
    const found = ((output.Responses ?? []) as Array<{ Item?: unknown }>).filter((r) => r.Item).length;
    return { operation, consistent: true, keys: items.length, found, reportedUnits };
  }
  if (operation === 'GetItem')
    return {
      operation,
      consistent: input.ConsistentRead === true,
      keys: 1,
      found: output.Item ? 1 : 0,
      reportedUnits,
    };
  return {
    operation,
    consistent: input.ConsistentRead === true,
    keys: 0,
    found: Number(output.Count ?? 0),
    reportedUnits,
  };
};

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

interface Forwarded {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

const forward = (upstream: URL, req: IncomingMessage, body: Buffer): Promise<Forwarded> =>
  new Promise((resolve, reject) => {
    const headers = { ...req.headers, host: upstream.host, 'content-length': String(body.length) };
    const out = request(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    out.on('error', reject);
    out.end(body);
  });

const reply = (res: ServerResponse, answer: Forwarded): void => {
  const headers = { ...answer.headers };
  delete headers['transfer-encoding'];
  headers['content-length'] = String(answer.body.length);
  res.writeHead(answer.status, headers);
  res.end(answer.body);
};

export interface RunningProxy {
  endpoint: string;
  stop(): Promise<void>;
}

const listen = async (server: Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

const closer = (server: Server) => () =>
  new Promise<void>((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });

/** A metering proxy in front of DynamoDB (Local). `totals` is live; `reset()` starts a fresh count. */
export const startDynamoMeter = async (
  upstreamEndpoint: string,
): Promise<RunningProxy & { totals(): DynamoTotals; reset(): void }> => {
  const upstream = new URL(upstreamEndpoint);
  let totals = emptyDynamoTotals();
  const account = (operation: string, input: Record<string, unknown>, answer: Forwarded) => {
    totals.requestsByOperation[operation] = (totals.requestsByOperation[operation] ?? 0) + 1;
    const isRead = READS.has(operation);
    const isWrite = WRITES.has(operation);
    if (!isRead && !isWrite) return;
    const target = operation === 'BatchGetItem' ? totals.batchGets : totals.byResource;
    let parsed: { ConsumedCapacity?: Capacity | Capacity[]; __type?: string } = {};
    try {
      parsed = JSON.parse(answer.body.toString('utf8') || '{}');
    } catch {
      parsed = {};
    }
    const capacities = parsed.ConsumedCapacity
      ? Array.isArray(parsed.ConsumedCapacity)
        ? parsed.ConsumedCapacity
        : [parsed.ConsumedCapacity]
      : [];
    if (answer.status === 200 && isRead)
      totals.readLog.push(readLogOf(operation, input, parsed as Record<string, unknown>, capacities));
    if (answer.status !== 200) {
      // A refused conditional write: AWS charges the table one write unit (items here are under 1 KB).
      const table = String(input.TableName ?? 'unknown');
      if (isWrite && /ConditionalCheckFailed|TransactionCanceled/.test(parsed.__type ?? ''))
        bump(target, table, { writeUnits: 1, writeRequests: 1 });
      return;
    }
    if (capacities.length === 0) {
      const table = String(
        input.TableName ?? Object.keys((input.RequestItems as object) ?? {})[0] ?? 'unknown',
      );
      bump(target, table, isRead ? { readRequests: 1 } : { writeRequests: 1 });
      return;
    }
    if (operation === 'GetItem' && capacities.length > 0) {
      const key = (input.Key as { pk?: { S?: string } } | undefined)?.pk?.S;
      if (key?.startsWith(HOLD_PREFIX))
        totals.holdReads.push({
          at: Date.now(),
          table: capacities[0]!.TableName ?? 'unknown',
          key,
          readUnits: capacities.reduce((sum, c) => sum + (c.Table?.CapacityUnits ?? c.CapacityUnits ?? 0), 0),
        });
    }
    const state = isWrite ? attentionStateOf(input) : undefined;
    // A request counts once: against the index a Query names, else against the table.
    const index = typeof input.IndexName === 'string' ? input.IndexName : undefined;
    for (const c of capacities) {
      const table = c.TableName ?? 'unknown';
      const tableUnits = c.Table?.CapacityUnits ?? c.CapacityUnits ?? 0;
      const counted = index ? 0 : 1;
      bump(
        target,
        table,
        isRead
          ? { readUnits: tableUnits, readRequests: counted }
          : { writeUnits: tableUnits, writeRequests: 1 },
      );
      if (index && !c.GlobalSecondaryIndexes?.[index]) bump(target, `${table}/${index}`, { readRequests: 1 });
      for (const [gsi, u] of Object.entries(c.GlobalSecondaryIndexes ?? {})) {
        const units = u.CapacityUnits ?? 0;
        bump(
          target,
          `${table}/${gsi}`,
          isRead ? { readUnits: units, readRequests: gsi === index ? 1 : 0 } : { writeUnits: units },
        );
        if (isWrite && units > 0) {
          const key = state ?? 'left';
          totals.attentionWritesByState[key] = (totals.attentionWritesByState[key] ?? 0) + units;
        }
      }
    }
  };
  const server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? 'unknown';
      let input: Record<string, unknown> = {};
      let body = raw;
      try {
        input = JSON.parse(raw.toString('utf8') || '{}');
        if (READS.has(operation) || WRITES.has(operation)) {
          input.ReturnConsumedCapacity = 'INDEXES';
          body = Buffer.from(JSON.stringify(input), 'utf8');
        }
      } catch {
        body = raw;
      }
      const answer = await forward(upstream, req, body);
      account(operation, input, answer);
      reply(res, answer);
    })().catch((error: unknown) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`metering proxy: ${error instanceof Error ? error.message : String(error)}`);
    });
  });
  const endpoint = await listen(server);
  return {
    endpoint,
    totals: () => structuredClone(totals),
    reset: () => {
      totals = emptyDynamoTotals();
    },
    stop: closer(server),
  };
};

/** A counting proxy in front of SQS (fauxqs). */
export const startSqsMeter = async (
  upstreamEndpoint: string,
): Promise<RunningProxy & { totals(): SqsTotals; reset(): void }> => {
  const upstream = new URL(upstreamEndpoint);
  let totals: SqsTotals = { byAction: {}, emptyReceives: 0, receivedMessages: 0 };
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const target = String(req.headers['x-amz-target'] ?? '');
      const action = target.startsWith('AmazonSQS.') ? target.slice('AmazonSQS.'.length) : 'other';
      const answer = await forward(upstream, req, body);
      if (action === 'ReceiveMessage') {
        let messages = 0;
        try {
          messages = (JSON.parse(answer.body.toString('utf8') || '{}').Messages ?? []).length;
        } catch {
          messages = 0;
        }
        if (messages === 0) totals.emptyReceives += 1;
        else {
          totals.byAction.ReceiveMessage = (totals.byAction.ReceiveMessage ?? 0) + 1;
          totals.receivedMessages += messages;
        }
      } else totals.byAction[action] = (totals.byAction[action] ?? 0) + 1;
      reply(res, answer);
    })().catch((error: unknown) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`metering proxy: ${error instanceof Error ? error.message : String(error)}`);
    });
  });
  const endpoint = await listen(server);
  return {
    endpoint,
    totals: () => structuredClone(totals),
    reset: () => {
      totals = { byAction: {}, emptyReceives: 0, receivedMessages: 0 };
    },
    stop: closer(server),
  };
};
