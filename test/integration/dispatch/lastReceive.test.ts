import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sqsRecord } from '../../../harness/sqsEvents.js';
import { createSqsHandler } from '../../../lib/dispatch/sqsHandler.js';
import { METRIC } from '../../../lib/observability.js';
import type { IntentSealer } from '../../../lib/seal/IntentSealer.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import type { Transport } from '../../../lib/transports/port.js';
import {
  crashAt,
  createHarness,
  type Harness,
  NoticeQueue,
  SimulatedCrash,
  sweeperFor,
  withoutKeyEnforcement,
} from '../../support/dispatchHarness.js';
import { resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// Real servers: DynamoDB Local (global setup) and the provider simulator over HTTP on 127.0.0.1. A
// `dispatching` row is owned, off the happy path, only by the seal its message's last receive writes
// (issue 26 item 10a): these cases break that last receive.
let sim: RunningProviderSimulator;
let h: Harness;
const clock = new ManualClock(Date.now());
const LEASE_MS = 60_000;
const MAX_RECEIVES = 5;

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
});
afterAll(async () => {
  await sim.stop();
});
beforeEach(() => {
  sim.reset();
  clock.set(Date.now());
});

/** A reset whose first handling died right after its `dispatching` write (nothing sent, nothing sealed). */
const diedDispatching = async (eventId: string) => {
  const body = JSON.stringify(resetIntent({ eventId }, clock.now()));
  await expect(
    h.dispatcher({ probe: crashAt('after_dispatching') }).handle(body, { messageId: 'm-0', receiveCount: 1 }),
  ).rejects.toThrow(SimulatedCrash);
  const row = (await h.ledger.listAttention('unknown')).items.find((r) => r.eventId === eventId);
  expect(row).toBeUndefined();
  return body;
};

const record = (messageId: string, body: string, receiveCount: number): SQSEvent['Records'][number] =>
  sqsRecord({ messageId, body, receiveCount, now: clock.now() });

describe('a claimed or dispatching row is found even when its last receive never runs', () => {
  it('the batch times out before reaching the last-receive record: it was sealed at the batch start, and the sweep makes its dispatching row unknown', async () => {
    // Prepare: the stuck row's message comes back for the last time behind a record whose provider hangs
    const stuck = await diedDispatching('last-receive-timeout');
    const slow = JSON.stringify(resetIntent({ eventId: 'slow-ahead' }, clock.now()));
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reached!: () => void;
    const slowInFlight = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const inner = h.transports.email;
    const email: Transport = {
      name: inner.name,
      channel: inner.channel,
      capabilities: inner.capabilities,
      send: async (message, key) => {
        if (message.dedupeKey.includes(':slow-ahead:')) {
          reached();
          await held;
        }
        return inner.send(message, key);
      },
    };
    const dispatcher = h.dispatcher({
      transports: { email, sms: h.transports.sms },
      maxReceiveCount: MAX_RECEIVES,
      leaseMs: LEASE_MS,
    });
    clock.advance(LEASE_MS + 1);
    const handler = createSqsHandler(dispatcher, { concurrency: 1 });
    // Act: the invocation is stuck on the first record (as one that times out); the sweep runs meanwhile
    const running = handler({ Records: [record('slow', slow, 1), record('stuck', stuck, MAX_RECEIVES)] });
    await slowInFlight;
    clock.advance(LEASE_MS + 5_000);
    const swept = await sweeperFor(h, clock, new NoticeQueue()).sweep();
    const row = (await h.ledger.listAttention('unknown')).items.find(
      (r) => r.eventId === 'last-receive-timeout',
    );
    release();
    await running;
    // Assess: found through the seal written before any record ran, and made a visible unknown
    expect(swept.markedUnknown).toBeGreaterThanOrEqual(1);
    expect(row).toMatchObject({ state: 'unknown' });
    expect(row?.history.at(-1)).toMatchObject({ s: 'unknown', why: 'dispatching_lease_expired' });
  });

  it('KMS fails while sealing on the last receive: the handling goes on, the stuck row becomes unknown, and the failure is counted', async () => {
    // Prepare: a sealer whose encrypt call fails (as KMS throttling would); no keyed replay to park for
    const stuck = await diedDispatching('last-receive-kms');
    const failing: IntentSealer = {
      seal: async () => {
        throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      },
      open: async () => {
        throw new Error('not used');
      },
    };
    const counted: string[] = [];
    const dispatcher = h.dispatcher({
      sealer: failing,
      maxReceiveCount: MAX_RECEIVES,
      leaseMs: LEASE_MS,
      transports: { email: withoutKeyEnforcement(h.transports.email), sms: h.transports.sms },
      metrics: { count: (name) => counted.push(name) },
    });
    clock.advance(LEASE_MS + 1);
    // Act
    const outcome = await dispatcher.handle(stuck, { messageId: 'm-last', receiveCount: MAX_RECEIVES });
    // Assess
    expect(outcome.channels[0]).toMatchObject({ state: 'unknown', action: 'marked_unknown' });
    expect(counted).toContain(METRIC.sealFailures);
    expect(sim.requests()).toHaveLength(0);
  });
});
