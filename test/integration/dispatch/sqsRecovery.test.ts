import type { SQSClient } from '@aws-sdk/client-sqs';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '../../../lib/aws/clients.js';
import { SqsIntentPublisher } from '../../../lib/aws/SqsIntentPublisher.js';
import type { Dispatcher, IntentOutcome } from '../../../lib/dispatch/Dispatcher.js';
import { createSqsHandler } from '../../../lib/dispatch/sqsHandler.js';
import { visibilityChanger } from '../../../lib/dispatch/visibility.js';
import { systemClock } from '../../../lib/domain/clock.js';
import { parseIntent } from '../../../lib/domain/intent.js';
import { deriveDedupeKey, identityOf } from '../../../lib/domain/keys.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { waitFor } from '../../../lib/local/ports.js';
import { createIntakeQueue, queueDepth, type RunningFauxqs, startFauxqs } from '../../../lib/local/queues.js';
import { SqsPoller } from '../../../lib/local/SqsPoller.js';
import { INTAKE_QUEUE } from '../../../lib/queueDefinition.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { CONTENT_KEY, createHarness, type Harness, SimulatedCrash } from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { receiptIntent, resetIntent } from '../../support/fixtures.js';

/**
 * The queue and the ledger together, on fauxqs with the intake queue's real redrive policy
 * (maxReceiveCount from lib/queueDefinition.ts, a DLQ) and a short visibility timeout as the local
 * stack uses, driven through the real SQS handler (visibility follows the ledger's due time) by the
 * local event-source poller. DynamoDB Local; the provider simulator (a test double) on loopback.
 *
 * Time is scaled down: the local stack's 8 s visibility is 2 s here (×¼), so "45 s Retry-After with 9
 * minutes left" becomes 11 s with 135 s left — still more than five visibility timeouts.
 */
const VISIBILITY_S = 2;
const LEASE_MS = 1_000;
const purposes = new PurposeRegistry();

let fauxqs: RunningFauxqs | undefined;
let sqs: SQSClient;
let sim: RunningProviderSimulator;
let h: Harness;

interface Receive {
  messageId: string;
  receiveCount: number;
  at: number;
  body: string;
}

const keyOf = (body: string, channel: 'email' | 'sms' = 'email') => {
  const parsed = parseIntent(body, { purposes, clock: systemClock });
  if (!parsed.ok) throw parsed.error;
  return deriveDedupeKey(identityOf(parsed.value.intent, parsed.value.policy, channel));
};

/** An intake queue with the real redrive policy, its DLQ, and the short local visibility. */
const createIntake = (name: string) =>
  createIntakeQueue(sqs, { name, visibilityTimeoutSeconds: VISIBILITY_S });

const depth = (queueUrl: string) => queueDepth(sqs, queueUrl);

/**
 * The real SQS handler (with ChangeMessageVisibility) behind the local event-source poller; every
 * record it is given is logged with its receive count, and every outcome the dispatcher returns.
 */
const consumer = (
  dispatcher: Dispatcher,
  queueUrl: string,
  receives: Receive[],
  outcomes: IntentOutcome[],
) => {
  const visibilityErrors: unknown[] = [];
  const recording = {
    prefetch: (bodies: readonly string[]) => dispatcher.prefetch(bodies),
    handle: async (
      body: string,
      envelope: { messageId: string; receiveCount?: number },
      facts?: Parameters<Dispatcher['handle']>[2],
    ) => {
      receives.push({
        messageId: envelope.messageId,
        receiveCount: envelope.receiveCount ?? 1,
        at: Date.now(),
        body,
      });
      const outcome = await dispatcher.handle(body, envelope, facts);
      outcomes.push(outcome);
      return outcome;
    },
  } as unknown as Dispatcher;
  const handle = createSqsHandler(recording, {
    concurrency: 4,
    changeVisibility: visibilityChanger(sqs, queueUrl),
    onVisibilityError: (error) => visibilityErrors.push(error),
  });
  const poller = new SqsPoller({
    sqs,
    queueUrl,
    handler: (event, context) => handle(event, context),
    region: 'us-east-1',
    functionName: 'sendproof-dispatch-test',
  });
  return { poller, visibilityErrors };
};

beforeAll(async () => {
  fauxqs = await startFauxqs();
  sqs = sqsClient({ region: 'us-east-1', endpoint: fauxqs.endpoint });
  sim = await startProviderSimulator();
  h = await createHarness(sim, systemClock);
});

afterAll(async () => {
  await fauxqs?.stop();
  await sim?.stop();
});

describe('the queue follows the ledger (fauxqs, real redrive policy, real SQS handler)', () => {
  it('a Retry-After longer than five visibility timeouts is honoured, then sent once; the reset with 135 s left is sent too', async () => {
    // Prepare: a receipt (no expiry) throttled for 12 s, and a reset (expires in 135 s) throttled for 11 s
    const { queueUrl, dlqUrl } = await createIntake('intake-retry');
    const receipt = JSON.stringify(receiptIntent({ eventId: 'e2e-retry-receipt' }));
    const reset = JSON.stringify(
      resetIntent({
        eventId: 'e2e-retry-reset',
        expiresAt: new Date(Date.now() + 135_000).toISOString(),
      }),
    );
    const throttled = [
      { body: receipt, key: keyOf(receipt), retryAfterSeconds: 12 },
      { body: reset, key: keyOf(reset), retryAfterSeconds: 11 },
    ];
    for (const t of throttled) {
      expect(t.retryAfterSeconds).toBeGreaterThan(5 * VISIBILITY_S);
      sim.addFault({
        match: { idempotencyKey: t.key.hash },
        fault: 'status_429',
        retryAfterSeconds: t.retryAfterSeconds,
      });
    }
    const receives: Receive[] = [];
    const outcomes: IntentOutcome[] = [];
    const dispatcher = h.dispatcher({
      workerId: 'dispatch:e2e-retry',
      leaseMs: LEASE_MS,
      maxReceiveCount: INTAKE_QUEUE.maxReceiveCount,
      realSleep: true,
    });
    const { poller, visibilityErrors } = consumer(dispatcher, queueUrl, receives, outcomes);
    const publisher = new SqsIntentPublisher(sqs, queueUrl);
    // Act
    await poller.start();
    const published = Date.now();
    for (const t of throttled) await publisher.publish(t.body);
    try {
      await waitFor(
        async () => {
          const rows = await Promise.all(throttled.map((t) => h.ledger.get(t.key.readable, true)));
          return rows.every((r) => r?.state === 'accepted') && (await depth(queueUrl)) === 0;
        },
        40_000,
        'both throttled intents accepted and the queue empty',
      );
    } finally {
      await poller.stop();
    }
    // Assess
    expect(visibilityErrors).toEqual([]);
    expect(await depth(dlqUrl)).toBe(0);
    for (const t of throttled) {
      const requests = sim.requests().filter((r) => r.idempotencyKey === t.key.hash);
      expect(requests.map((r) => r.outcome)).toEqual(['throttled', 'accepted']);
      // Honoured: nothing reached the provider again before the Retry-After had passed.
      const gap = Date.parse(requests[1]!.at) - Date.parse(requests[0]!.at);
      expect(gap).toBeGreaterThanOrEqual(t.retryAfterSeconds * 1000);
      const row = (await h.ledger.get(t.key.readable, true))!;
      expect(row.history.map((e) => e.s)).toEqual(['dispatching', 'retry_wait', 'dispatching', 'accepted']);
      expect(row.providerMessageId).toMatch(/^sim_/);
      // The visibility followed the due time: two receives, not one per visibility timeout.
      const mine = receives.filter((r) => r.body === t.body);
      expect(mine.map((r) => r.receiveCount)).toEqual([1, 2]);
      expect(mine[1]!.at - mine[0]!.at).toBeGreaterThanOrEqual(t.retryAfterSeconds * 1000 - 1_000);
      expect(mine[1]!.at - published).toBeLessThan(t.retryAfterSeconds * 1000 + 3 * VISIBILITY_S * 1000);
    }
    // The reset was sent while it still had time left.
    const resetRow = (await h.ledger.get(throttled[1]!.key.readable, true))!;
    expect(resetRow.history.at(-1)!.at).toBeLessThan(resetRow.expiresAt!);
  }, 60_000);

  it('a redelivery under another HMAC key while the row is in flight: the row is settled (unknown), the new content is blocked, nothing sent', async () => {
    // Prepare: worker A claims and writes dispatching, then hangs (a frozen environment) past its lease
    const { queueUrl, dlqUrl } = await createIntake('intake-rekeyed');
    const body = JSON.stringify(resetIntent({ eventId: 'e2e-rekeyed' }));
    const key = keyOf(body);
    let reachedDispatching!: () => void;
    const dispatching = new Promise<void>((r) => {
      reachedDispatching = r;
    });
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const frozen = h.dispatcher({
      workerId: 'dispatch:e2e-frozen',
      leaseMs: LEASE_MS,
      maxReceiveCount: INTAKE_QUEUE.maxReceiveCount,
      probe: async (edge, context) => {
        if (edge !== 'after_dispatching' || context.dedupeKey !== key.readable) return;
        reachedDispatching();
        await released;
        throw new SimulatedCrash('frozen worker torn down');
      },
    });
    // Worker B runs after a key rotation: the same intent renders the same text, but hashes differently.
    const rotated = h.dispatcher({
      workerId: 'dispatch:e2e-rotated',
      leaseMs: LEASE_MS,
      maxReceiveCount: INTAKE_QUEUE.maxReceiveCount,
      contentHashKey: `${CONTENT_KEY}-rotated`,
    });
    const receivesA: Receive[] = [];
    const receivesB: Receive[] = [];
    const outcomesB: IntentOutcome[] = [];
    const a = consumer(frozen, queueUrl, receivesA, []);
    const b = consumer(rotated, queueUrl, receivesB, outcomesB);
    await new SqsIntentPublisher(sqs, queueUrl).publish(body);
    // Act: A takes the message and freezes after dispatching; B gets it after the visibility timeout
    await a.poller.start();
    await dispatching;
    // A polls no more; its frozen batch ends only when the test releases it.
    const frozenPoll = a.poller.stop();
    await b.poller.start();
    try {
      await waitFor(
        async () => (await depth(queueUrl)) === 0,
        20_000,
        'the redelivered message acknowledged',
      );
    } finally {
      await b.poller.stop();
      release();
      await frozenPoll;
    }
    // Assess: the in-flight row was settled first — its lease and state before the content check
    const row = (await h.ledger.get(key.readable, true))!;
    expect(receivesA.map((r) => r.receiveCount)).toEqual([1]);
    expect(receivesB.map((r) => r.receiveCount)).toEqual([2]);
    expect(row.state).toBe('unknown');
    expect(row.history.map((e) => e.s)).toEqual(['dispatching', 'unknown']);
    expect(row.history.at(-1)).toMatchObject({
      why: 'dispatching_lease_expired',
      by: 'dispatch:e2e-rotated',
    });
    const attention = await h.ledger.listAttention('unknown', { limit: 100 });
    expect(attention.items.map((i) => i.pk)).toContain(key.readable);
    // …then the new content was blocked, recorded beside the row, and nothing reached the provider
    expect(outcomesB).toEqual([
      expect.objectContaining({
        disposition: 'done',
        channels: [expect.objectContaining({ state: 'blocked', action: 'content_mismatch_blocked' })],
      }),
    ]);
    const side = await localDynamo().doc.send(
      new ScanCommand({
        TableName: h.table,
        FilterExpression: 'blockedAgainst = :pk',
        ExpressionAttributeValues: { ':pk': key.readable },
        ConsistentRead: true,
      }),
    );
    expect(side.Items).toHaveLength(1);
    expect(side.Items![0]).toMatchObject({ kind: 'blocked', state: 'blocked' });
    expect(side.Items![0]!.contentHash).not.toBe(row.contentHash);
    expect(sim.requests().filter((r) => r.idempotencyKey === key.hash)).toEqual([]);
    expect(await depth(dlqUrl)).toBe(0);
  }, 40_000);
});
