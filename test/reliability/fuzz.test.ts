import type { SQSEvent, SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invalidBodyId } from '../../lib/dispatch/sideRows.js';
import { createSqsHandler } from '../../lib/dispatch/sqsHandler.js';
import { systemClock } from '../../lib/domain/clock.js';
import { parseIntent } from '../../lib/domain/intent.js';
import { deriveDedupeKey, identityOf } from '../../lib/domain/keys.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../lib/simulator/ProviderSimulator.js';
import { CONTENT_KEY, createHarness, type Harness } from '../support/dispatchHarness.js';
import { MARKERS, receiptIntent, resetIntent } from '../support/fixtures.js';
import { ManualClock } from '../support/manualClock.js';

/**
 * Property-based fuzzing of the intent boundary. Every bad body must come back as a structured error
 * (issues naming a field, never echoing a value); through the SQS handler it must become an `invalid`
 * ledger row, the worker must not crash, and the valid intents in the same batch must still be sent.
 * Servers: DynamoDB Local (the run's) and the provider simulator on loopback (a test double).
 */
const SEED = 20261130;
const purposes = new PurposeRegistry();
const clock = new ManualClock();
const DAY = 86_400_000;

const base = () =>
  resetIntent(
    { eventId: 'fuzz-base', recipient: { ref: 'fuzz-user', email: MARKERS.email } },
    clock.now(),
  ) as Record<string, unknown>;
const KNOWN_FIELDS = new Set([
  'version',
  'eventId',
  'purpose',
  'recipient',
  'channels',
  'delivery',
  'template',
  'locale',
  'data',
  'secrets',
  'expiresAt',
  'attachments',
  'tenant',
  'intentId',
  'resendOf',
]);

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const INJECTIONS = [
  "'; DROP TABLE ledger; --",
  '{{secrets.token}}',
  '{{{data}}}',
  '<script>alert(1)</script>',
  '\u0024{jndi:ldap://x/a}',
  '../../etc/passwd',
  'a\u0000b',
  '" OR 1=1 --',
  '$where: 1',
  'invalid#00',
  'x:y:z',
];
const injection = fc.oneof(
  fc.constantFrom(...INJECTIONS),
  fc.tuple(fc.constantFrom(...INJECTIONS), fc.string({ maxLength: 8 })).map(([a, b]) => a + b),
);
const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
);
const identifierField = fc.constantFrom('eventId', 'tenant', 'recipient.ref', 'template.id');

const setPath = (target: Record<string, unknown>, path: string, value: unknown) => {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) node = node[part] as Record<string, unknown>;
  node[parts.at(-1)!] = value;
  return target;
};

/** A bad body and the fields its issues must name (any one of them), or undefined for "any field". */
interface BadBody {
  kind: string;
  body: string;
  fields?: string[];
}

const malformedJson: fc.Arbitrary<BadBody> = fc
  .tuple(fc.nat(), fc.string({ maxLength: 20 }))
  .map(([cut, tail]) => {
    const json = JSON.stringify(base());
    return {
      kind: 'malformed_json',
      body: json.slice(0, 1 + (cut % (json.length - 1))) + tail,
      fields: ['(root)'],
    };
  })
  .filter((b) => {
    try {
      JSON.parse(b.body);
      return false;
    } catch {
      return true;
    }
  });
const notAnObject: fc.Arbitrary<BadBody> = fc
  .oneof(wrongType, fc.string())
  .map((v) => ({ kind: 'not_an_object', body: JSON.stringify(v) ?? 'undefined', fields: ['(root)'] }));
const wrongTypes: fc.Arbitrary<BadBody> = fc
  .tuple(
    fc.constantFrom(
      'version',
      'eventId',
      'purpose',
      'recipient',
      'channels',
      'delivery',
      'template',
      'locale',
      'data',
      'secrets',
      'expiresAt',
      'attachments',
      'tenant',
      'intentId',
    ),
    wrongType,
  )
  .filter(([field, value]) => !(field === 'version' && value === 1))
  .map(([field, value]) => ({
    kind: 'wrong_type',
    body: JSON.stringify(setPath(base(), field, value)),
    fields: [field],
  }));
const unknownFields: fc.Arbitrary<BadBody> = fc
  .tuple(
    fc.constantFrom('(root)', 'recipient', 'template'),
    fc
      .string({ minLength: 1, maxLength: 12 })
      .filter(
        (k) => !KNOWN_FIELDS.has(k) && !['ref', 'email', 'phone', 'id', 'revision', '__proto__'].includes(k),
      ),
    fc.jsonValue({ maxDepth: 1 }),
  )
  .map(([where, key, value]) => {
    const intent = base();
    const target = where === '(root)' ? intent : (intent[where] as Record<string, unknown>);
    target[key] = value;
    return { kind: 'unknown_field', body: JSON.stringify(intent), fields: [where] };
  });
const hugeStrings: fc.Arbitrary<BadBody> = fc
  .tuple(
    fc.constantFrom('eventId', 'recipient.ref', 'data.appName', 'secrets.token', 'intentId', 'locale'),
    fc.integer({ min: 5_000, max: 70_000 }),
    fc.constantFrom('x', 'é', '😀'),
  )
  .map(([field, length, unit]) => ({
    kind: 'huge_string',
    body: JSON.stringify(setPath(base(), field, unit.repeat(length))),
  }));
const loneSurrogates: fc.Arbitrary<BadBody> = fc
  .tuple(identifierField, fc.string({ maxLength: 5 }), loneSurrogate, fc.boolean())
  .map(([field, prefix, surrogate, raw]) => {
    const intent = setPath(base(), field, `a${prefix}${surrogate}`);
    // Either escaped by JSON.stringify (\udxxx) or written raw into the body (not even well-formed UTF-16).
    const body = raw
      ? JSON.stringify(intent).replace(/\\ud[89a-f][0-9a-f]{2}/gi, surrogate)
      : JSON.stringify(intent);
    return { kind: 'lone_surrogate', body, fields: [field] };
  });
const badDates: fc.Arbitrary<BadBody> = fc
  .oneof(fc.integer({ min: -8_000_000 * DAY, max: -1 }), fc.integer({ min: 367 * DAY, max: 3_000_000 * DAY }))
  .map((offset) => ({
    kind: 'bad_date',
    body: JSON.stringify({ ...base(), expiresAt: new Date(clock.now() + offset).toISOString() }),
    fields: ['expiresAt'],
  }));
const injections: fc.Arbitrary<BadBody> = fc
  .tuple(
    fc.constantFrom(
      'eventId',
      'tenant',
      'recipient.ref',
      'template.id',
      'template.revision',
      'purpose',
      'locale',
    ),
    injection,
  )
  .map(([field, value]) => ({
    kind: 'injection',
    body: JSON.stringify(setPath(base(), field, value)),
    fields: [field],
  }));

const badBody = fc.oneof(
  malformedJson,
  notAnObject,
  wrongTypes,
  unknownFields,
  hugeStrings,
  loneSurrogates,
  badDates,
  injections,
);

describe('intent boundary fuzzing (parseIntent)', () => {
  it('every malformed, mistyped, oversized, badly encoded, out-of-range or injection-looking intent is a structured error naming the field, never echoing a secret', () => {
    // Prepare
    const seen = new Map<string, number>();
    // Act + Assess
    fc.assert(
      fc.property(badBody, (bad) => {
        seen.set(bad.kind, (seen.get(bad.kind) ?? 0) + 1);
        const result = parseIntent(bad.body, { purposes, clock });
        expect(result.ok).toBe(false);
        if (result.ok) return;
        const issues = result.error.issues;
        expect(issues.length).toBeGreaterThan(0);
        for (const issue of issues) {
          expect(typeof issue.field).toBe('string');
          expect(typeof issue.message).toBe('string');
          expect(issue.message.length).toBeLessThanOrEqual(200);
        }
        if (bad.fields)
          expect(
            issues.some((i) => bad.fields!.some((f) => i.field === f || i.field.startsWith(`${f}.`))),
          ).toBe(true);
        const rendered = JSON.stringify(result.error.toJSON());
        for (const marker of [MARKERS.token, MARKERS.email]) expect(rendered).not.toContain(marker);
      }),
      { numRuns: 400, seed: SEED },
    );
    expect([...seen.keys()].sort()).toEqual([
      'bad_date',
      'huge_string',
      'injection',
      'lone_surrogate',
      'malformed_json',
      'not_an_object',
      'unknown_field',
      'wrong_type',
    ]);
  });

  it('lone surrogates and injection-looking text in free-form data are accepted as data, not crashes', () => {
    // Act + Assess
    fc.assert(
      fc.property(fc.oneof(loneSurrogate, injection), (value) => {
        const intent = setPath(base(), 'data.appName', value);
        const result = parseIntent(JSON.stringify(intent), { purposes, clock });
        expect(result.ok).toBe(true);
      }),
      { numRuns: 200, seed: SEED },
    );
  });
});

describe('intent boundary fuzzing through the SQS handler (DynamoDB Local + provider simulator)', () => {
  let sim: RunningProviderSimulator;
  let harness: Harness;
  beforeAll(async () => {
    sim = await startProviderSimulator();
    harness = await createHarness(sim, systemClock);
  });
  afterAll(async () => {
    await sim.stop();
  });

  it('fuzzed batches: each bad record becomes an invalid ledger row with its issues, the worker never throws, and every valid intent in the batch is sent once', async () => {
    // Prepare
    const handler = createSqsHandler(harness.dispatcher({ workerId: 'dispatch:fuzz', leaseMs: 30_000 }), {
      concurrency: 5,
    });
    let serial = 0;
    let invalidRows = 0;
    let validSent = 0;
    const live = { now: () => Date.now() };
    const stillBad = (b: BadBody) => !parseIntent(b.body, { purposes, clock: live, allowExpired: true }).ok;
    const batch = fc.tuple(
      fc.array(badBody.filter(stillBad), { minLength: 1, maxLength: 6 }),
      fc.integer({ min: 1, max: 4 }),
      fc.nat(),
    );
    // Act + Assess
    await fc.assert(
      fc.asyncProperty(batch, async ([bad, validCount, rotate]) => {
        const valid = Array.from({ length: validCount }, () => {
          serial += 1;
          const eventId = `fuzz-valid-${serial}`;
          return JSON.stringify(
            serial % 2
              ? resetIntent({ eventId, recipient: { ref: `fuzz-${serial}`, email: MARKERS.email } })
              : receiptIntent({ eventId }),
          );
        });
        const bodies = [...bad.map((b) => b.body), ...valid];
        const shift = rotate % bodies.length;
        const ordered = [...bodies.slice(shift), ...bodies.slice(0, shift)];
        const records = ordered.map(
          (body, i) =>
            ({
              messageId: `m-${serial}-${i}`,
              body,
              attributes: { ApproximateReceiveCount: '1' },
            }) as unknown as SQSRecord,
        );
        const response = await handler({ Records: records } as SQSEvent);
        expect(response.batchItemFailures).toEqual([]);
        for (const b of bad) {
          // Keyed like the dispatcher keys it: an HMAC of the body, never a plain hash.
          const pk = `invalid#${invalidBodyId(b.body, CONTENT_KEY).slice(0, 32)}`;
          const row = await harness.ledger.get(pk, true);
          expect(row?.state).toBe('invalid');
          const expected = parseIntent(b.body, { purposes, clock: live, allowExpired: true });
          expect(expected.ok).toBe(false);
          if (!expected.ok) expect(row?.issues).toEqual(expected.error.issues);
          invalidRows += 1;
        }
        for (const body of valid) {
          const parsed = parseIntent(body, { purposes, clock: live });
          if (!parsed.ok) throw parsed.error;
          const key = deriveDedupeKey(identityOf(parsed.value.intent, parsed.value.policy, 'email'));
          expect((await harness.ledger.get(key.readable, true))?.state).toBe('accepted');
          expect(
            sim.requests().filter((r) => r.idempotencyKey === key.hash && r.outcome === 'accepted'),
          ).toHaveLength(1);
          validSent += 1;
        }
      }),
      { numRuns: 40, seed: SEED },
    );
    expect(invalidRows).toBeGreaterThan(40);
    expect(validSent).toBeGreaterThanOrEqual(40);
    // Nothing the fuzzer carried in a valid intent's secrets or addresses reached a log line.
    const logs = harness.logger.lines.join('\n');
    for (const marker of [MARKERS.token, MARKERS.email, MARKERS.phone]) expect(logs).not.toContain(marker);
  });

  it('an expiry already in the past is refused at publish, but a queued one becomes an expired row and is never sent', async () => {
    // Prepare: the dispatcher accepts past expiries on purpose (allowExpired) — a reset that waited too
    // long in the queue is a fact for the audit trail, not a malformed message.
    const handler = createSqsHandler(harness.dispatcher({ workerId: 'dispatch:fuzz-expired' }), {
      concurrency: 5,
    });
    let serial = 0;
    // Act + Assess
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 400 * DAY }), async (ago) => {
        serial += 1;
        const intent = resetIntent({
          eventId: `fuzz-expired-${serial}`,
          recipient: { ref: `fuzz-exp-${serial}`, email: MARKERS.email },
          expiresAt: new Date(Date.now() - ago).toISOString(),
        });
        const body = JSON.stringify(intent);
        const refused = parseIntent(body, { purposes, clock: systemClock });
        expect(refused.ok ? [] : refused.error.issues.map((i) => i.field)).toEqual(['expiresAt']);
        const response = await handler({
          Records: [{ messageId: `exp-${serial}`, body, attributes: { ApproximateReceiveCount: '1' } }],
        } as unknown as SQSEvent);
        expect(response.batchItemFailures).toEqual([]);
        const parsed = parseIntent(body, { purposes, clock: systemClock, allowExpired: true });
        if (!parsed.ok) throw parsed.error;
        const key = deriveDedupeKey(identityOf(parsed.value.intent, parsed.value.policy, 'email'));
        expect((await harness.ledger.get(key.readable, true))?.state).toBe('expired');
        expect(sim.requests().filter((r) => r.idempotencyKey === key.hash)).toEqual([]);
      }),
      { numRuns: 20, seed: SEED },
    );
  });
});
