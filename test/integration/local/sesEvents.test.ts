import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDocumentClient, sqsClient } from '../../../lib/aws/clients.js';
import { isTerminal } from '../../../lib/domain/states.js';
import { expandFact } from '../../../lib/evidence/facts.js';
import { DynamoSuppressionList } from '../../../lib/ledger/DynamoSuppressionList.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { type RunningLocalStack, startLocalStack } from '../../../lib/local/LocalStack.js';
import type { EmittedEvent } from '../../../lib/local/SesEventEmitter.js';
import { publishIntents } from '../../../lib/publish/publishIntents.js';
import { pdfAttachment } from '../../support/dispatchHarness.js';
import { healthReportIntent, receiptIntent } from '../../support/fixtures.js';

// Real servers, started by the local stack in this process: DynamoDB Local (Java), fauxqs (SQS + S3),
// aws-ses-v2-local behind the SES event emitter, the provider simulator (SMS), and the functions worker
// running the dispatch and evidence handlers. Every email really goes to aws-ses-v2-local; every event is
// an EventBridge-shaped SES event handled by functions/evidence.
let stack: RunningLocalStack;

beforeAll(async () => {
  stack = await startLocalStack({
    stateDir: mkdtempSync(join(tmpdir(), 'sendproof-ses-events-')),
    emailTransport: 'ses',
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

const rowsOf = async (): Promise<DeliveryRecord[]> => {
  const ledger = dynamoDocumentClient({ region: stack.state.region, endpoint: stack.state.dynamodb });
  const out = await ledger.send(new ScanCommand({ TableName: stack.state.ledgerTable }));
  return ((out.Items ?? []) as DeliveryRecord[]).filter((r) => r.state);
};

const receiptTo = (eventId: string, ref: string, email: string) =>
  receiptIntent({ eventId, recipient: { ref, email } });

describe('local SES evidence: aws-ses-v2-local sends become SES events through functions/evidence', () => {
  it('records delivered, bounced and complained facts, suppresses on a hard bounce only, dedupes duplicates in any order, and falls back to SMS after a bounce', async () => {
    // Prepare
    const intents = [
      receiptTo('ses-ok', 'player-1', 'success@simulator.amazonses.com'),
      receiptTo('ses-hard', 'player-2', 'bounce@simulator.amazonses.com'),
      receiptTo('ses-soft', 'player-3', 'bounce+transient@simulator.amazonses.com'),
      receiptTo('ses-spam', 'player-4', 'complaint+dup+ooo@simulator.amazonses.com'),
      healthReportIntent({
        eventId: 'ses-report',
        delivery: 'fallback',
        recipient: { ref: 'patient-5', email: 'bounce@simulator.amazonses.com', phone: '+15555550155' },
        attachments: [pdfAttachment()],
      }),
    ];

    // Act
    const published = await publishIntents(
      sqsClient({ region: stack.state.region, endpoint: stack.state.sqs }),
      stack.state.queueUrl,
      intents,
    );
    let rows: DeliveryRecord[] = [];
    const settled = (r: DeliveryRecord) =>
      isTerminal(r.state) &&
      (r.channel !== 'email' || r.state !== 'accepted' || (r.delivery && r.delivery.status !== 'sent'));
    const deadline = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 500));
      rows = await rowsOf();
    } while ((rows.length < 6 || !rows.every(settled)) && Date.now() < deadline);
    // Let the duplicated and reordered events all arrive.
    await new Promise((r) => setTimeout(r, 1500));
    rows = await rowsOf();
    const emitted = (await (await fetch(`${stack.state.ses}/_sendproof/events`)).json()) as EmittedEvent[];
    const store = (await (await fetch(`${stack.state.ses}/store`)).json()) as { emails: unknown[] };
    const suppressions = new DynamoSuppressionList(
      dynamoDocumentClient({ region: stack.state.region, endpoint: stack.state.dynamodb }),
      stack.state.suppressionTable,
    );

    // Assess
    expect(published.every((p) => p.ok)).toBe(true);
    // The inbox (through the emitter's proxy) holds the five emails.
    expect(store.emails).toHaveLength(5);
    const row = (eventId: string, channel = 'email') =>
      rows.find((r) => r.eventId === eventId && r.channel === channel)!;
    const facts = (eventId: string) => (row(eventId).delivery?.h ?? []).map((h) => h.f);
    expect(row('ses-ok')).toMatchObject({ state: 'accepted', delivery: { status: 'delivered' } });
    expect(
      row('ses-ok').delivery?.h.every(
        (h) => expandFact(h, row('ses-ok').providerMessageId).msg === row('ses-ok').providerMessageId,
      ),
    ).toBe(true);
    expect(row('ses-hard')).toMatchObject({
      state: 'accepted',
      delivery: { status: 'bounced_permanent', why: 'ses:Bounce:Permanent/General' },
    });
    expect(row('ses-soft')).toMatchObject({ state: 'accepted', delivery: { status: 'bounced_transient' } });
    expect(row('ses-spam').delivery?.status).toBe('complained');
    // Each event was delivered twice, newest first; each fact is on the row once.
    const spamEvents = emitted.filter((e) => e.messageId === row('ses-spam').providerMessageId);
    expect(spamEvents.map((e) => e.eventType)).toEqual([
      'Complaint',
      'Complaint',
      'Delivery',
      'Delivery',
      'Send',
      'Send',
    ]);
    // The Send names the message the row records: it adds nothing (lib/evidence/facts.ts addsNothing).
    expect([...facts('ses-spam')].sort()).toEqual(['complained', 'delivered']);
    // Suppressed: the hard bounce and the complaint; not the soft bounce nor the delivered one.
    expect((await suppressions.isSuppressed('acme-games', 'player-2', 'email')).suppressed).toBe(true);
    expect((await suppressions.isSuppressed('acme-games', 'player-4', 'email')).suppressed).toBe(true);
    expect((await suppressions.isSuppressed('acme-games', 'player-3', 'email')).suppressed).toBe(false);
    expect((await suppressions.isSuppressed('acme-games', 'player-1', 'email')).suppressed).toBe(false);
    // The health report's email bounced after SES accepted it: exactly one SMS went out.
    expect(row('ses-report')).toMatchObject({ state: 'accepted', delivery: { status: 'bounced_permanent' } });
    expect(rows.filter((r) => r.eventId === 'ses-report' && r.channel === 'sms').map((r) => r.state)).toEqual(
      ['accepted'],
    );
    expect(emitted.every((e) => e.ok)).toBe(true);
  }, 120_000);
});
