import { CreateQueueCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sqsClient } from '../../../lib/aws/clients.js';
import { SqsIntentPublisher } from '../../../lib/aws/SqsIntentPublisher.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { startFauxqs } from '../../../lib/local/queues.js';
import { OperatorDecisions } from '../../../lib/reconcile/OperatorDecisions.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import {
  createHarness,
  type Harness,
  pdfAttachment,
  restTransports,
  withoutKeyEnforcement,
} from '../../support/dispatchHarness.js';
import { healthReportIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { pushEvidenceOnly, reconcilerFor } from './support.js';

// Real servers: DynamoDB Local (global setup), the provider simulator and fauxqs (SQS), all on 127.0.0.1.
// The accept/reject decisions and their refusals run on the in-memory ledger in
// test/unit/reconcile/decisions.test.ts.
let sim: RunningProviderSimulator;
let h: Harness;
let sqs: SQSClient;
let queueUrl: string;
let stopQueue: () => Promise<unknown>;
const clock = new ManualClock(Date.now());
let seq = 0;
const envelope = () => ({ messageId: `msg-${++seq}` });
const noKeys = () => ({
  email: withoutKeyEnforcement(restTransports(sim).email),
  sms: restTransports(sim).sms,
});

const decisions = (decisionId = `dec-${++seq}`) =>
  new OperatorDecisions({
    ledger: h.ledger,
    purposes: new PurposeRegistry(),
    clock,
    publisher: new SqsIntentPublisher(sqs, queueUrl),
    newDecisionId: () => decisionId,
  });

/** A lost answer on a provider with nothing to ask: reconciled into quarantine, as an operator finds it. */
const quarantinedReset = async (eventId: string): Promise<{ row: DeliveryRecord; intent: object }> => {
  const intent = resetIntent({ eventId }, clock.now());
  sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
  const first = await h.dispatcher({ transports: noKeys() }).handle(JSON.stringify(intent), envelope());
  await reconcilerFor(h.ledger, noKeys(), clock).runAll();
  const row = (await h.ledger.get(first.channels[0]!.dedupeKey))!;
  expect(row.state).toBe('quarantined');
  return { row, intent };
};

const receiveAll = async (): Promise<string[]> => {
  const out = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
  );
  return (out.Messages ?? []).map((m) => m.Body!);
};

beforeAll(async () => {
  sim = await startProviderSimulator();
  h = await createHarness(sim, clock);
  const app = await startFauxqs();
  stopQueue = () => app.stop();
  sqs = sqsClient({ region: 'us-east-1', endpoint: app.endpoint });
  queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `intake-${Date.now()}` }))).QueueUrl!;
});
afterAll(async () => {
  await sim.stop();
  await stopQueue();
});
beforeEach(() => {
  sim.reset();
  clock.set(Date.now());
});

describe('operator decisions', () => {
  it('resend: a linked new intent is published, delivered once by the dispatcher, and the old row only gains the link and the decision', async () => {
    // Prepare
    const { row, intent } = await quarantinedReset('op-resend');
    // Act
    const result = await decisions('dec-resend-1').decide({
      dedupeKey: row.pk,
      outcome: 'resend',
      reason: 'provider console shows nothing; ticket OPS-42',
      operator: 'ana',
      intent,
    });
    const bodies = await receiveAll();
    const delivered = await Promise.all(
      bodies.map((b) => h.dispatcher({ transports: noKeys() }).handle(b, envelope())),
    );
    const redelivered = await h.dispatcher({ transports: noKeys() }).handle(bodies[0]!, envelope());
    // Assess
    expect(result).toMatchObject({
      decisionId: 'dec-resend-1',
      state: 'superseded',
      newDedupeKey: `${row.pk}:resend=dec-resend-1`,
    });
    expect(bodies).toHaveLength(1);
    expect(JSON.parse(bodies[0]!).resendOf).toEqual({ dedupeKey: row.pk, decisionId: 'dec-resend-1' });
    expect(delivered[0]?.channels[0]).toMatchObject({
      dedupeKey: result.newDedupeKey,
      state: 'accepted',
      action: 'sent',
    });
    expect(redelivered.channels[0]?.action).toBe('already_final');
    expect(sim.requests().filter((r) => r.outcome === 'accepted')).toHaveLength(1);
    const old = (await h.ledger.get(row.pk))!;
    const { state, version, updatedAt, history, attn, attnAt, ttl, supersededBy, ...rest } = old;
    const { state: _s, version: _v, updatedAt: _u, history: _h, attn: _a, attnAt: _t, ...before } = row;
    expect(rest).toEqual(before);
    expect({ state, version, supersededBy, attn }).toEqual({
      state: 'superseded',
      version: row.version + 1,
      supersededBy: result.newDedupeKey,
      attn: undefined,
    });
    expect(history.slice(0, -1)).toEqual(row.history);
    expect(history.at(-1)).toMatchObject({
      s: 'superseded',
      by: 'operator:ana',
      why: 'resend:dec-resend-1:provider console shows nothing; ticket OPS-42',
    });
    const fresh = await h.ledger.get(result.newDedupeKey!);
    expect(fresh?.resendOf).toBe(row.pk);
  });

  it('resend refuses an intent whose identity does not match the old key, and changes nothing', async () => {
    // Prepare
    const { row, intent } = await quarantinedReset('op-mismatch');
    // Act
    const attempt = decisions().decide({
      dedupeKey: row.pk,
      outcome: 'resend',
      reason: 'wrong file',
      operator: 'ana',
      intent: { ...intent, eventId: 'someone-else' },
    });
    // Assess
    await expect(attempt).rejects.toMatchObject({ code: 'intent_mismatch' });
    expect((await h.ledger.get(row.pk))?.version).toBe(row.version);
    expect(await receiveAll()).toEqual([]);
  });

  it('resend whose publish fails says which decision is recorded, and --decision-id finishes it', async () => {
    // Prepare: a publisher that fails once, as SQS might
    const { row, intent } = await quarantinedReset('op-resend-publish-fails');
    let calls = 0;
    const flaky = {
      publish: async (body: string) => {
        calls += 1;
        if (calls === 1) throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
        return new SqsIntentPublisher(sqs, queueUrl).publish(body);
      },
    };
    const withFlaky = new OperatorDecisions({
      ledger: h.ledger,
      purposes: new PurposeRegistry(),
      clock,
      publisher: flaky,
      // Like the CLI: every run generates a fresh decision id unless one is given.
      newDecisionId: () => `dec-flaky-${calls + 1}`,
    });
    const request = {
      dedupeKey: row.pk,
      outcome: 'resend' as const,
      reason: 'ticket OPS-43',
      operator: 'ana',
      intent,
    };
    // Act
    const first = withFlaky.decide(request);
    await expect(first).rejects.toThrow(/decision dec-flaky-1 is recorded.*--decision-id dec-flaky-1/);
    // A plain second run is a new decision on a superseded row: refused, pointing at the recorded one.
    await expect(withFlaky.decide(request)).rejects.toMatchObject({ code: 'not_decidable' });
    const finished = await withFlaky.decide({ ...request, decisionId: 'dec-flaky-1' });
    // Assess
    expect(finished).toMatchObject({ decisionId: 'dec-flaky-1', alreadyRecorded: true });
    expect((await h.ledger.get(row.pk))?.state).toBe('superseded');
    expect(await receiveAll()).toHaveLength(1);
  });

  it('rejected on the active channel of a fallback flow advances it, so the parked intent sends the SMS', async () => {
    // Prepare
    const transports = { email: pushEvidenceOnly(restTransports(sim).email), sms: restTransports(sim).sms };
    const body = JSON.stringify(
      healthReportIntent({ eventId: 'op-fallback', attachments: [pdfAttachment()] }),
    );
    sim.addFault({ match: { channel: 'email' }, fault: 'accept_then_drop', times: 1 });
    const first = await h.dispatcher({ transports }).handle(body, envelope());
    // Act
    const result = await decisions().decide({
      dedupeKey: first.channels[0]!.dedupeKey,
      outcome: 'rejected',
      reason: 'mailbox confirmed dead by support',
      operator: 'cy',
    });
    const redelivery = await h.dispatcher({ transports }).handle(body, envelope());
    // Assess
    expect(result).toMatchObject({ state: 'resolved_rejected', fallbackAdvanced: true });
    expect(redelivery.channels[0]).toMatchObject({ channel: 'sms', state: 'accepted' });
    expect(sim.requests().filter((r) => r.channel === 'sms')).toHaveLength(1);
  });
});
