import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { outcomeEventsOf } from '../../../lib/events/mapping.js';
import {
  OUTCOME_EVENT_JSON_SCHEMA_FILE,
  OutcomeEventSchemaV1,
  outcomeEventJsonSchema,
} from '../../../lib/events/outcomeEvent.js';
import { PACKAGE_ROOT } from '../../../lib/packageRoot.js';
import { N, scenarioRecords } from '../../fixtures/archive/scenario.js';
import { at, notificationRecords, streamRecord } from '../../fixtures/archive/streamRecords.js';

const committed = JSON.parse(readFileSync(join(PACKAGE_ROOT, OUTCOME_EVENT_JSON_SCHEMA_FILE), 'utf8'));
const ajv = new Ajv2020({ allErrors: true, strict: false });
(addFormatsModule as unknown as { default: (a: Ajv2020) => void }).default(ajv);
const validate = ajv.compile(committed);

const t0 = at('2026-11-30T10:00:00Z');
/** An email reset: claimed → dispatching → accepted, then SES Send and Delivery recorded as facts. */
const deliveredReset = () => {
  const records = notificationRecords(
    { eventId: 'rst_1', recipientRef: 'player-1', channel: 'email', tenant: 'acme' },
    [
      {
        s: 'dispatching',
        at: t0,
        by: 'dispatch:w1',
        why: 'gates_passed',
        n: 1,
        set: { transport: 'ses', attempts: 1, reqAt: t0 - 700 },
      },
      {
        s: 'accepted',
        at: t0 + 400,
        by: 'dispatch:w1',
        why: 'provider_accepted',
        msg: 'ses-1',
        n: 1,
        set: { providerMessageId: 'ses-1' },
      },
    ],
  );
  const accepted = records[1]!;
  const image = accepted.dynamodb!.NewImage as Record<string, never>;
  // A fact changes the row's `delivery` (not its version): one stream record per fact.
  const withFacts = (facts: Array<{ f: string; at: number; why: string }>) => ({
    M: {
      status: { S: facts[facts.length - 1]!.f },
      at: { N: String(facts[facts.length - 1]!.at) },
      why: { S: facts[facts.length - 1]!.why },
      n: { N: String(facts.length) },
      h: {
        L: facts.map((f) => ({
          M: {
            f: { S: f.f },
            at: { N: String(f.at) },
            by: { S: 'evidence:ses' },
            why: { S: f.why },
            id: { S: `ses:${f.f}` },
            msg: { S: 'ses-1' },
          },
        })),
      },
    },
  });
  const sent = { f: 'sent', at: t0 + 500, why: 'ses:Send' };
  const delivered = { f: 'delivered', at: t0 + 1_900, why: 'ses:Delivery' };
  const r1 = {
    ...accepted,
    eventName: 'MODIFY' as const,
    eventID: 'fact-1',
    dynamodb: {
      ...accepted.dynamodb,
      SequenceNumber: '900000000000000000001',
      OldImage: image,
      NewImage: { ...image, delivery: withFacts([sent]) },
    },
  };
  const r2 = {
    ...accepted,
    eventName: 'MODIFY' as const,
    eventID: 'fact-2',
    dynamodb: {
      ...accepted.dynamodb,
      SequenceNumber: '900000000000000000002',
      OldImage: r1.dynamodb.NewImage,
      NewImage: { ...image, delivery: withFacts([sent, delivered]) },
    },
  };
  return [...records, r1, r2];
};

describe('outcome events from the ledger stream', () => {
  it('schema/outcome-event-v1.json is current (npm run schema) and accepts every mapped event', () => {
    // Assess
    expect(committed).toEqual(outcomeEventJsonSchema());
    const events = scenarioRecords().flatMap(outcomeEventsOf);
    expect(events.length).toBeGreaterThan(10);
    for (const event of events) {
      expect(OutcomeEventSchemaV1.safeParse(event).success).toBe(true);
      expect(validate(event), JSON.stringify(validate.errors)).toBe(true);
    }
    expect(validate({ ...events[0], email: 'player@example.com' })).toBe(false);
  });

  it('a caller hears where the message went, not the working states: accepted, then the delivery fact (not Send)', () => {
    // Act
    const events = deliveredReset().flatMap(outcomeEventsOf);

    // Assess
    expect(
      events.map((e) => [e.type, e.previousState, e.state, e.version, e.providerMessageId, e.reason]),
    ).toEqual([
      ['notification.state.accepted', 'dispatching', 'accepted', 2, 'ses-1', 'provider_accepted'],
      ['notification.fact.delivered', 'accepted', 'accepted', 2, 'ses-1', 'ses:Delivery'],
    ]);
    expect(events[1]).toMatchObject({
      kind: 'fact',
      fact: 'delivered',
      time: '2026-11-30T10:00:01.900Z',
      tenant: 'acme',
      recipientRef: 'player-1',
      channel: 'email',
    });
  });

  it('the same stream record delivered twice yields the same ids; another transition another id', () => {
    // Act
    const once = scenarioRecords().flatMap(outcomeEventsOf);
    const again = scenarioRecords().flatMap(outcomeEventsOf);

    // Assess
    expect(again.map((e) => e.id)).toEqual(once.map((e) => e.id));
    expect(new Set(once.map((e) => e.id)).size).toBe(once.length);
  });

  it('the receipt re-claimed after its TTL is two acceptances with two ids (a duplicate, not a redelivery)', () => {
    // Act
    const accepted = scenarioRecords()
      .flatMap(outcomeEventsOf)
      .filter((e) => e.eventId === N.F.eventId && e.state === 'accepted' && e.kind === 'state');

    // Assess
    expect(accepted.map((e) => e.providerMessageId)).toEqual(['ses-msg-F1', 'ses-msg-F2']);
    expect(accepted[0]!.id).not.toBe(accepted[1]!.id);
  });

  it('unknown, quarantined and an operator decision are told; a lease renewal and a fallback pointer are not', () => {
    // Act
    const events = scenarioRecords().flatMap(outcomeEventsOf);
    const e = events
      .filter((x) => x.eventId === N.E.eventId)
      .map((x) => [x.previousState, x.state, x.reason]);

    // Assess
    expect(e).toEqual([
      ['dispatching', 'unknown', 'provider_timeout_after_send'],
      ['unknown', 'quarantined', 'ambiguity_deadline_passed'],
      ['quarantined', 'resolved_accepted', 'provider_dashboard_shows_delivered'],
    ]);
    expect(events.some((x) => x.notificationKey.startsWith('flow#'))).toBe(false);
    expect(events.filter((x) => x.eventId === N.D.eventId).map((x) => x.state)).toEqual(['unknown']);
  });

  it('an invalid intent that names no tenant, event or recipient yields no event', () => {
    // Prepare
    const record = streamRecord({
      eventName: 'INSERT',
      newImage: {
        pk: 'invalid#abc',
        kind: 'invalid',
        state: 'invalid',
        version: 1,
        tenant: '-',
        purpose: '-',
        eventId: '-',
        recipientRef: '-',
        channel: 'email',
        history: [{ s: 'invalid', at: t0, by: 'dispatch:w1', why: 'schema:m1' }],
      },
    });

    // Act & Assess
    expect(outcomeEventsOf(record)).toEqual([]);
  });
});
