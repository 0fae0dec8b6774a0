/**
 * How AWS bills what the benchmark measured: one pure rule per service, each with the documentation it
 * follows. The cost model (bench/cost.ts) applies these to the requests, bytes and durations the cost
 * phase (bench/costBench.ts) recorded, instead of trusting an emulator's own accounting or an assumed
 * figure.
 */

// ── DynamoDB reads ─────────────────────────────────────────────────────────────────────────────────────

/**
 * One read request as the metering proxy saw it (bench/capacityProxy.ts `readLog`). `reportedUnits` is
 * what DynamoDB Local's ReturnConsumedCapacity answered, which counts found items only.
 */
export interface ReadRequestLog {
  operation: 'GetItem' | 'BatchGetItem' | 'Query' | 'Scan' | 'TransactGetItems' | string;
  /** Strongly consistent (ConsistentRead: true). TransactGetItems are always serializable. */
  consistent: boolean;
  /** Keys asked for (GetItem 1, BatchGetItem the keys of every table, TransactGetItems the items). */
  keys: number;
  /** Items the answer held. */
  found: number;
  reportedUnits: number;
}

/**
 * Read units AWS bills for one request. https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html
 * ("Read request units": a strongly consistent read of up to 4 KB is 1 unit, eventually consistent 0.5,
 * transactional 2) and https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/provisioned-capacity-mode.html
 * ("If you perform a read operation on an item that does not exist, DynamoDB still consumes read
 * throughput": 1 unit strongly consistent, 0.5 eventually). BatchGetItem bills each key as a GetItem; a
 * Query that returns nothing still costs the minimum.
 */
export const billedReadUnits = (read: ReadRequestLog): number => {
  const transactional = read.operation === 'TransactGetItems';
  const minimum = transactional ? 2 : read.consistent ? 1 : 0.5;
  if (read.operation === 'Query' || read.operation === 'Scan') return Math.max(read.reportedUnits, minimum);
  const missing = Math.max(0, read.keys - read.found);
  return read.reportedUnits + missing * minimum;
};

// ── SQS ────────────────────────────────────────────────────────────────────────────────────────────────

/** https://aws.amazon.com/sqs/pricing/: "each 64 KB chunk of a payload is billed as 1 request". */
const SQS_CHUNK_BYTES = 64 * 1024;
/** SendMessageBatch, ReceiveMessage and DeleteMessageBatch take or return at most 10 messages. */
export const SQS_MAX_BATCH = 10;

/** Billed requests for one API call carrying `payloadBytes` (at least one). */
export const sqsRequestsForCall = (payloadBytes: number): number =>
  Math.max(1, Math.ceil(payloadBytes / SQS_CHUNK_BYTES));

/**
 * Billed requests to move `messageBytes` through calls of at most 10 messages each (a batched send, the
 * receives of an event source batch, its DeleteMessageBatch): the messages in order, 10 to a call.
 */
export const sqsRequestsForMessages = (messageBytes: readonly number[], perCall = SQS_MAX_BATCH): number => {
  let requests = 0;
  for (let i = 0; i < messageBytes.length; i += perCall)
    requests += sqsRequestsForCall(messageBytes.slice(i, i + perCall).reduce((a, b) => a + b, 0));
  return requests;
};

/**
 * What the Lambda event source mapping spends on one batch of `messageBytes`: ReceiveMessage returns at
 * most 10 messages, so a batch of 100 takes at least 10 receives; the mapping deletes what succeeded with
 * DeleteMessageBatch, 10 entries a call (a receipt handle is a few hundred bytes, one chunk).
 * https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html (batching),
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html (MaxNumberOfMessages ≤ 10).
 */
export const sqsEventSourceRequests = (messageBytes: readonly number[]): number =>
  sqsRequestsForMessages(messageBytes) + Math.ceil(messageBytes.length / SQS_MAX_BATCH);

/**
 * Empty receives of an idle SQS event source: Lambda polls with (at least) 5 concurrent long polls of
 * 20 s, so about 5 × 3 a minute per queue whatever the traffic. https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html
 * ("Lambda begins with five concurrent batches") and long polling's 20 s maximum. An upper bound: under
 * traffic the same polls return messages and are counted with the batches.
 */
export const SQS_IDLE_RECEIVES_PER_QUEUE_MONTH = 5 * 3 * 60 * 24 * 30;

// ── Lambda ─────────────────────────────────────────────────────────────────────────────────────────────

/**
 * "At 1,769 MB, a function has the equivalent of one vCPU", and CPU is allocated in proportion to memory.
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html
 */
const MB_PER_VCPU = 1769;

/** The share of one vCPU a function of `memoryMb` runs on (a Node function uses one thread: at most 1). */
export const vcpuShare = (memoryMb: number): number => Math.min(1, memoryMb / MB_PER_VCPU);

/**
 * Lambda duration estimated from a local run: the CPU time this process spent (process.cpuUsage, on a
 * whole core) stretched by the function's vCPU share, plus the time it awaited I/O (wall − CPU). The I/O
 * part is DynamoDB Local's and the simulator's latency on loopback, and on a shared machine it also holds
 * the time the process waited for a core: an estimate, not a measurement of AWS.
 */
export const estimatedLambdaMs = (sample: { wallMs: number; cpuMs: number }, memoryMb: number): number =>
  sample.cpuMs / vcpuShare(memoryMb) + Math.max(0, sample.wallMs - sample.cpuMs);

/**
 * GB-seconds one invocation is billed: duration rounded up to the millisecond × configured memory.
 * https://aws.amazon.com/lambda/pricing/ ("Duration is ... rounded up to the nearest 1 ms"; the price
 * depends on the memory you allocate).
 */
export const billedGbSeconds = (durationMs: number, memoryMb: number): number =>
  (Math.ceil(durationMs) / 1000) * (memoryMb / 1024);

// ── CloudWatch Logs ────────────────────────────────────────────────────────────────────────────────────

/**
 * Bytes an ingested log event is counted as: its UTF-8 bytes plus 26, the size PutLogEvents counts for
 * every event. https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html
 */
export const LOG_EVENT_OVERHEAD_BYTES = 26;
export const logEventBytes = (line: string): number =>
  Buffer.byteLength(line, 'utf8') + LOG_EVENT_OVERHEAD_BYTES;

/** GB as CloudWatch bills it (binary gigabytes). */
export const BYTES_PER_GB = 1024 ** 3;

/**
 * The platform records Lambda writes for every invocation with the JSON log format (the construct sets
 * `loggingFormat: JSON`), as documented in https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-advanced.html
 * and https://docs.aws.amazon.com/lambda/latest/dg/telemetry-schema-reference.html: `platform.start` and
 * `platform.report` (with the X-Ray fields, tracing being active). Sized from these representative
 * records, not captured: Lambda writes them, not the function.
 */
const PLATFORM_RECORDS_PER_INVOCATION = [
  '{"time":"2026-12-02T12:00:00.000Z","type":"platform.start","record":{"requestId":"6f7f0961-5c6b-4a79-8a2f-0c4f4b5c1d2e","version":"$LATEST"}}',
  '{"time":"2026-12-02T12:00:00.120Z","type":"platform.report","record":{"requestId":"6f7f0961-5c6b-4a79-8a2f-0c4f4b5c1d2e","metrics":{"durationMs":118.42,"billedDurationMs":119,"memorySizeMB":512,"maxMemoryUsedMB":118},"tracing":{"spanId":"54565fb41ac79632","type":"X-Amzn-Trace-Id","value":"Root=1-674db3a0-0b2c1d3e4f5a6b7c8d9e0f1a;Parent=54565fb41ac79632;Sampled=1"},"status":"success"}}',
] as const;

export const platformLogBytesPerInvocation = (): number =>
  PLATFORM_RECORDS_PER_INVOCATION.reduce((sum, line) => sum + logEventBytes(line), 0);

// ── X-Ray ──────────────────────────────────────────────────────────────────────────────────────────────

/**
 * Traces a function with active tracing records per second: Lambda's default sampling, "the first
 * request each second, and 5 percent of additional requests" (https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html),
 * taken per function (an upper bound if the reservoir is shared).
 */
export const sampledTracesPerSecond = (invocationsPerSecond: number): number =>
  Math.min(invocationsPerSecond, 1) + 0.05 * Math.max(0, invocationsPerSecond - 1);

// ── event sources that batch by window ────────────────────────────────────────────────────────────────

/**
 * Records one invocation of a windowed event source handles at a steady rate: what arrives within the
 * batching window, at most the batch size, at least one.
 */
export const recordsPerInvocation = (
  recordsPerSecond: number,
  source: { batchSize: number; maxBatchingWindowSeconds: number },
): number => Math.max(1, Math.min(source.batchSize, recordsPerSecond * source.maxBatchingWindowSeconds));

/** `items` in consecutive groups of `size` (the last may be shorter): event-source batches, request chunks. */
export const chunked = <T>(items: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
};
