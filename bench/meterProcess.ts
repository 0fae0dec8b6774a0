import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDynamoMeter } from './capacityProxy.js';

/**
 * DynamoDB metering proxies in their own process, for the cost phase (bench/costBench.ts): the proxies
 * parse and forward every request, and in the measuring process that CPU would be counted as the
 * functions' own. Usage: `tsx bench/meterProcess.ts <upstream endpoint> <name>...`; prints one JSON line
 * `{ "control": url, "sink": url, "meters": { name: endpoint } }`. GET <control>/<name> answers that meter's totals,
 * POST <control>/<name>/reset starts a fresh count. Bound to 127.0.0.1; stopped by its parent (SIGTERM).
 */
const [upstream, ...names] = process.argv.slice(2);
if (!upstream || names.length === 0) throw new Error('usage: meterProcess <upstream> <name>...');
const meters = Object.fromEntries(
  await Promise.all(names.map(async (name) => [name, await startDynamoMeter(upstream)] as const)),
);
/**
 * The sink: an HTTP fake of the two AWS calls the stream consumers make, EventBridge PutEvents (AWS JSON
 * 1.1, `X-Amz-Target: AWSEvents.PutEvents`; every entry accepted) and S3 PutObject (any PUT, 200 with an
 * ETag). It counts the entries and their sizes, and the PUTs, for the cost model.
 */
const sinkCounts = { putEventsCalls: 0, eventBytes: [] as number[], s3Puts: 0, s3Bytes: 0, other: 0 };
const sink = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (String(req.headers['x-amz-target'] ?? '') === 'AWSEvents.PutEvents') {
      const entries = (JSON.parse(body.toString('utf8')).Entries ?? []) as unknown[];
      sinkCounts.putEventsCalls += 1;
      // EventBridge sizes an entry by its fields' UTF-8 bytes; its JSON is a close upper bound.
      for (const entry of entries) sinkCounts.eventBytes.push(Buffer.byteLength(JSON.stringify(entry)));
      res
        .writeHead(200, { 'content-type': 'application/x-amz-json-1.1' })
        .end(
          JSON.stringify({ FailedEntryCount: 0, Entries: entries.map((_, i) => ({ EventId: `e-${i}` })) }),
        );
      return;
    }
    if (req.method === 'PUT') {
      sinkCounts.s3Puts += 1;
      sinkCounts.s3Bytes += body.length;
      res.writeHead(200, { etag: '"bench"' }).end();
      return;
    }
    sinkCounts.other += 1;
    res.writeHead(200).end();
  });
});
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));

const control = createServer((req, res) => {
  const [name, action] = (req.url ?? '/').slice(1).split('/');
  if (name === 'sink') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(sinkCounts));
    return;
  }
  const meter = name ? meters[name] : undefined;
  if (!meter) {
    res.writeHead(404).end();
    return;
  }
  if (req.method === 'POST' && action === 'reset') {
    meter.reset();
    res.writeHead(204).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(meter.totals()));
});
await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
const port = (control.address() as AddressInfo).port;
console.log(
  JSON.stringify({
    control: `http://127.0.0.1:${port}`,
    sink: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
    meters: Object.fromEntries(Object.entries(meters).map(([name, m]) => [name, m.endpoint])),
  }),
);
process.on('SIGTERM', () => process.exit(0));
