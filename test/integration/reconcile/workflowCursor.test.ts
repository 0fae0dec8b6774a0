import '../../support/promiseWithResolvers.js';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { StateMachine } from 'aws-local-stepfunctions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../../lib/config.js';
import { hashKey } from '../../../lib/domain/keys.js';
import { ATTENTION_SHARDS, attentionPartitionOf } from '../../../lib/ledger/attentionIndex.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { localLambdaContext } from '../../../lib/local/lambdaContext.js';
import { DynamoRunCursor } from '../../../lib/reconcile/RunCursor.js';
import { SES_AND_SMS, synthStack } from '../../infra/synth.js';
import { createLedgerTable, createSuppressionTable, localDynamo } from '../../support/dynamo.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';

// The synthesized reconcile state machine, executed by aws-local-stepfunctions, with its one Task pointed
// at the real reconcile Lambda entry, on DynamoDB Local. The provider behind the REST adapter is a
// scripted HTTP fake whose lookups answer 503, so every visited row stays `unknown` (waiting for the
// lookup) and a run that re-read the same rows would show as a repeated visit.
const PAGE_SIZE = 25; // the Reconciler's default page
const PAGES_PER_RUN = 2;
const ROWS = 70; // more than one run's bound (2 × 25)

type Reconcile = (event: unknown, context: Context) => Promise<unknown>;
let reconcile: Reconcile;
let provider: ScriptedHttpServer;
let definition: string;
let runCursor: DynamoRunCursor;
let ledger: DynamoLedger;
/** Idempotency keys in the order the rows entered `unknown` (oldest first). */
const keys: string[] = [];

const unknownRow = (i: number, now: number): DeliveryRecord => {
  const pk = `acme:receipt:ord_${String(i).padStart(3, '0')}:player-${i}:email:rev=v4`;
  const unknownAt = now - 60_000 + i; // distinct ages, oldest first
  return {
    pk,
    kind: 'delivery',
    idempotencyKey: hashKey(pk),
    state: 'unknown',
    version: 3,
    tenant: 'acme',
    purpose: 'receipt',
    eventId: `ord_${i}`,
    recipientRef: `player-${i}`,
    channel: 'email',
    logicalKey: pk.replace(':email', ''),
    contentHash: `h1:${'c'.repeat(64)}`,
    policyVersion: 'receipt/1',
    templateId: 'receipt',
    templateRevision: 'v4',
    templateOwner: 'application',
    transport: 'rest',
    attempts: 1,
    createdAt: unknownAt - 1_000,
    updatedAt: unknownAt,
    attn: attentionPartitionOf('unknown', pk, ATTENTION_SHARDS.default),
    attnAt: unknownAt,
    history: [
      { s: 'claimed', at: unknownAt - 1_000, by: 'dispatch:seed', why: 'intent_received' },
      { s: 'dispatching', at: unknownAt - 990, by: 'dispatch:seed', why: 'gates_passed', n: 1 },
      { s: 'unknown', at: unknownAt, by: 'dispatch:seed', why: 'ambiguous:timeout', n: 1 },
    ],
  } as DeliveryRecord;
};

/** The DefinitionString of the synthesized state machine, with the Lambda ARN token resolved. */
const synthesizedDefinition = (): string => {
  const { template } = synthStack({ ...SES_AND_SMS, reconcileMaxPagesPerRun: PAGES_PER_RUN });
  const machines = Object.values(template.findResources('AWS::StepFunctions::StateMachine'));
  expect(machines).toHaveLength(1);
  const body = machines[0]!.Properties.DefinitionString as string | { 'Fn::Join': [string, unknown[]] };
  if (typeof body === 'string') return body;
  return body['Fn::Join'][1]
    .map((part) =>
      typeof part === 'string' ? part : 'arn:aws:lambda:eu-west-1:111122223333:function:sendproof-reconcile',
    )
    .join(body['Fn::Join'][0]);
};

/** Keys the provider was asked about since `from` (each lookup is one visit of one row). */
const lookedUp = (from: number): string[] =>
  provider.requests
    .slice(from)
    .map((r) => new URL(r.path, 'http://x').searchParams.get('idempotency_key'))
    .filter((k): k is string => k !== null);

/** One scheduled run: the Scheduler's static input `{}`, the state machine as synthesized. */
const scheduledRun = async (input: { restart?: boolean } = {}) => {
  const from = provider.requests.length;
  const machine = new StateMachine(JSON.parse(definition));
  const execution = machine.run(input, {
    overrides: {
      taskResourceLocalHandlers: {
        ReconcilePage: (input) => reconcile(input, localLambdaContext('reconcile')) as never,
      },
    },
  });
  const output = (await execution.result) as Record<string, unknown>;
  return { output, visited: lookedUp(from) };
};

/** Rows of one page are looked up concurrently: which rows a run visits matters, not their order. */
const sorted = (values: readonly string[]) => [...values].sort();

beforeAll(async () => {
  provider = await ScriptedHttpServer.start(() => ({ reply: 503, body: { error: 'lookup_unavailable' } }));
  const { raw, doc, endpoint } = localDynamo();
  const table = await createLedgerTable(raw, 'workflow-cursor');
  runCursor = new DynamoRunCursor(doc, table);
  ledger = new DynamoLedger(doc, table);
  const now = Date.now();
  const rows = Array.from({ length: ROWS }, (_, i) => unknownRow(i, now));
  keys.push(...rows.map((r) => r.idempotencyKey));
  for (let i = 0; i < rows.length; i += 25) {
    let requests: unknown[] = rows.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    while (requests.length) {
      const out = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests as never } }));
      requests = out.UnprocessedItems?.[table] ?? [];
    }
  }
  const suppressionTable = await createSuppressionTable(raw);
  Object.assign(process.env, {
    [ENV.ledgerTable]: table,
    [ENV.suppressionTable]: suppressionTable,
    [ENV.endpointDynamoDb]: endpoint,
    // The sweep publishes resume notices here; this table holds no sealed notification, so it never does.
    [ENV.queueUrl]: 'http://127.0.0.1:9/000000000000/unused-intake',
    [ENV.emailTransport]: 'rest',
    [ENV.smsTransport]: 'rest',
    [ENV.restBaseUrl]: provider.url,
    POWERTOOLS_SERVICE_NAME: 'sendproof',
    POWERTOOLS_METRICS_NAMESPACE: 'Sendproof',
  });
  ({ handler: reconcile } = (await import('../../../functions/reconcile/index.js')) as unknown as {
    handler: Reconcile;
  });
  definition = synthesizedDefinition();
}, 120_000);

afterAll(async () => {
  await provider.stop();
});

describe('the reconcile loop carries its cursor to the next scheduled run', () => {
  it('two consecutive runs visit every row once, more rows than one run may page through', async () => {
    // Act
    const first = await scheduledRun();
    const second = await scheduledRun();
    const third = await scheduledRun();
    // Assess: run 1 spends its budget and pauses; run 2 starts where it stopped and reaches the end
    expect(first.output).toMatchObject({ status: 'continues next schedule', pages: PAGES_PER_RUN });
    expect(sorted(first.visited)).toEqual(sorted(keys.slice(0, PAGES_PER_RUN * PAGE_SIZE)));
    expect(sorted(second.visited)).toEqual(sorted(keys.slice(PAGES_PER_RUN * PAGE_SIZE)));
    expect((second.output as { page: { hasMore: boolean } }).page.hasMore).toBe(false);
    const both = [...first.visited, ...second.visited];
    expect(new Set(both).size).toBe(ROWS);
    expect(both).toHaveLength(ROWS);
    // A run that read to the end clears the position: the next cycle starts again from the oldest row.
    expect(sorted(third.visited)).toEqual(sorted(keys.slice(0, PAGES_PER_RUN * PAGE_SIZE)));
    console.info(
      `reconcile workflow: ${ROWS} unknown rows, bound ${PAGES_PER_RUN}×${PAGE_SIZE} per run → run 1 visited ${first.visited.length}, run 2 ${second.visited.length} (union ${new Set(both).size}), run 3 restarted at the oldest`,
    );
  });

  it('starts at the oldest row when asked to restart, or when the saved position is unreadable', async () => {
    // Prepare: a saved position after the first 50 rows
    const { cursor } = await ledger.listAttention('unknown', { limit: PAGES_PER_RUN * PAGE_SIZE });
    await runCursor.save(cursor, Date.now());
    // Act
    const restarted = await scheduledRun({ restart: true });
    await runCursor.save('not-a-cursor-this-ledger-wrote', Date.now());
    const unreadable = await scheduledRun();
    // Assess
    expect(sorted(restarted.visited)).toEqual(sorted(keys.slice(0, PAGES_PER_RUN * PAGE_SIZE)));
    expect(sorted(unreadable.visited)).toEqual(sorted(keys.slice(0, PAGES_PER_RUN * PAGE_SIZE)));
  });
});
