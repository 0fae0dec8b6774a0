import { describe, expect, it } from 'vitest';
import { hashKey } from '../../../lib/domain/keys.js';
import { type ParsedEvent, parseLambdaEvent } from '../../../lib/evidence/events.js';
import { parseResendEvent, parseSendGridEvent, parseTwilioCallback } from '../../../lib/evidence/webhooks.js';
import { type SentMail, sesEvent } from '../../../lib/local/SesEventEmitter.js';
import {
  resendWebhookPayload,
  type SimulatedEvent,
  sendGridWebhookEvent,
  twilioCallbackParams,
} from '../../../lib/simulator/webhookPayloads.js';
import { labelKeyOf, sealLabel } from '../../../lib/transports/labels.js';
import { type CorpusCase, loadCorpus } from '../../contract/providers/corpus.js';

/**
 * Issue 25: our fakes are held to the corpus. Each event the local SES event emitter and the provider
 * simulator produce is compared with the documented example of the same type (test/contract/providers):
 * the same field paths with the same JSON types, both ways, and the same reading by the real parser.
 * Maps whose keys are the sender's own (message tags, custom args) compare as one wildcard key; a field
 * the provider documents as conditional ("if applicable", only with an IP pool or a category) may be absent.
 */
const corpus = new Map(loadCorpus().map((c) => [c.id, c]));
const documented = (id: string): Record<string, unknown> => {
  const c = corpus.get(id) as CorpusCase | undefined;
  if (!c || c.kind === 'error') throw new Error(`no documented example ${id}`);
  return c.payload;
};

const WILDCARD_MAPS = ['mail.tags', 'data.tags', 'context'];
const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** `path → JSON type` for every field, array elements as `[]`, sender-defined map keys as `*`. */
const shapeOf = (value: unknown, path = ''): Map<string, string> => {
  const shape = new Map<string, string>();
  const walk = (v: unknown, p: string) => {
    if (p) shape.set(p, typeOf(v));
    if (Array.isArray(v)) for (const item of v) walk(item, `${p}[]`);
    else if (v && typeof v === 'object')
      for (const [key, child] of Object.entries(v)) {
        const k = WILDCARD_MAPS.includes(p) ? '*' : key;
        walk(child, p ? `${p}.${k}` : k);
      }
  };
  walk(value, path);
  return shape;
};

/** The differences between a fake's shape and the documented one (empty when they match). */
const differences = (fake: unknown, doc: unknown, optional: readonly string[] = [], ours: RegExp = /^$/) => {
  const a = shapeOf(fake);
  const b = shapeOf(doc);
  const isOptional = (p: string) =>
    optional.some((o) => p === o || p.startsWith(`${o}.`) || p.startsWith(`${o}[]`));
  const missing = [...b.keys()].filter((p) => !a.has(p) && !isOptional(p));
  // Elements of an array the example leaves empty have no documented shape to differ from.
  const underEmptyArray = (p: string) =>
    [...b.entries()].some(
      ([q, t]) =>
        t === 'array' && p.startsWith(`${q}[]`) && ![...b.keys()].some((k) => k.startsWith(`${q}[]`)),
    );
  const extra = [...a.keys()].filter((p) => !b.has(p) && !ours.test(p) && !underEmptyArray(p));
  const mistyped = [...a.keys()]
    .filter((p) => b.has(p) && a.get(p) !== b.get(p))
    .map((p) => `${p}: ${a.get(p)} ≠ ${b.get(p)}`);
  return { missing, extra, mistyped };
};
const none = { missing: [], extra: [], mistyped: [] };

const ROW = 'clinic:health-report:report-42:patient-9:email';
const KEY = hashKey(ROW);
/** The label the dispatcher sends (lib/transports/labels.ts): the only thing the events carry back. */
const LABEL = sealLabel(labelKeyOf('test-secret-0123456789'), ROW);

/** What the real parser makes of it, without the ids and times that differ between any two events. */
const reading = (parsed: ParsedEvent) =>
  parsed.kind === 'evidence'
    ? { fact: parsed.evidence.fact, outcome: parsed.evidence.outcome, why: parsed.evidence.why }
    : { ignored: parsed.reason };

describe('the local SES event emitter emits what SES documents', () => {
  const mail: SentMail = {
    messageId: 'ses-local-1',
    from: 'receipts@sendproof.test',
    to: ['recipient@example.com'],
    subject: 'Your receipt',
    tags: [{ Name: 'sendproof-key', Value: LABEL }],
    configurationSet: 'sendproof-events',
    sentAt: Date.parse('2026-12-02T10:00:00Z'),
  };
  const at = mail.sentAt + 1500;
  const withOurTags = (payload: Record<string, unknown>) => {
    const copy = structuredClone(payload) as { mail: { tags: Record<string, string[]> } };
    copy.mail.tags = { ...copy.mail.tags, 'sendproof-key': [LABEL] };
    return copy;
  };
  const cases = [
    { type: 'Send', doc: 'ses/event-send' },
    { type: 'Delivery', doc: 'ses/event-delivery' },
    { type: 'Bounce', doc: 'ses/event-bounce-permanent-general', bounceType: 'Permanent' },
    { type: 'Bounce', doc: 'ses/event-bounce-transient-general', bounceType: 'Transient' },
    { type: 'Complaint', doc: 'ses/event-complaint' },
  ] as const;

  for (const c of cases) {
    it(`${c.type}${'bounceType' in c ? ` ${c.bounceType}` : ''}: the same fields, types and reading as ${c.doc}`, () => {
      // Act
      const fake = sesEvent(mail, c.type, at, {
        region: 'us-east-1',
        ...('bounceType' in c ? { bounceType: c.bounceType, bounceSubType: 'General' } : {}),
      });
      const doc = documented(c.doc);

      // Assess
      expect(differences(fake.detail, doc)).toEqual(none);
      expect(reading(parseLambdaEvent(fake)[0]!)).toEqual(
        reading(parseLambdaEvent({ source: 'aws.ses', detail: withOurTags(doc) })[0]!),
      );
    });
  }

  it('the EventBridge envelope has the fields of a documented AWS EventBridge event', () => {
    // Act
    const fake = sesEvent(mail, 'Delivery', at, { region: 'us-east-1' });
    const { detail: _fake, ...fakeEnvelope } = fake;
    const { detail: _doc, ...docEnvelope } = documented('sms-v2/event-eventbridge-text-successful');

    // Assess
    expect(differences(fakeEnvelope, docEnvelope)).toEqual(none);
  });
});

describe('the provider simulator pushes webhooks shaped as Resend, SendGrid and Twilio document them', () => {
  const event = (
    type: SimulatedEvent['type'],
    channel: 'email' | 'sms',
    bounceType?: 'Permanent' | 'Transient',
  ) => ({
    id: 'sim_evt_1',
    type,
    messageId: 'sim_4f6a2c1e-8d2b-4c61-9a57-2f0c7c9d1e22',
    idempotencyKey: KEY,
    channel,
    at: '2026-12-02T10:00:01.500Z',
    ...(bounceType ? { bounceType } : {}),
    tags: { 'sendproof-key': LABEL },
  });

  const resend = [
    ['sent', 'resend/event-sent'],
    ['delivered', 'resend/event-delivered'],
    ['complained', 'resend/event-complained'],
    ['bounced', 'resend/event-bounced-permanent'],
  ] as const;
  for (const [type, doc] of resend) {
    it(`Resend ${type}: the fields and types of ${doc}, read the same`, () => {
      // Act
      const fake = resendWebhookPayload(event(type, 'email', type === 'bounced' ? 'Permanent' : undefined))!;
      const docPayload = structuredClone(documented(doc)) as { data: { tags: Record<string, string> } };
      docPayload.data.tags = { ...docPayload.data.tags, 'sendproof-key': LABEL };

      // Assess: broadcast_id and template_id are "if applicable"
      expect(differences(fake, docPayload, ['data.broadcast_id', 'data.template_id'])).toEqual(none);
      expect(reading(parseResendEvent(fake))).toEqual(reading(parseResendEvent(docPayload)));
    });
  }

  const sendgrid = [
    ['sent', 'sendgrid/event-processed'],
    ['delivered', 'sendgrid/event-delivered'],
    ['complained', 'sendgrid/event-spamreport'],
    ['bounced', 'sendgrid/event-bounce'],
  ] as const;
  for (const [type, doc] of sendgrid) {
    it(`SendGrid ${type}: the fields and types of ${doc}, read the same`, () => {
      // Act
      const fake = sendGridWebhookEvent(event(type, 'email', type === 'bounced' ? 'Permanent' : undefined))!;
      const docEvent = { ...documented(doc), sendproof_key: LABEL };

      // Assess: category (only when the send sets one) and pool (only with an IP pool) may be absent;
      // the custom args (sendproof_*) are ours, at the top level as the docs place them
      expect(differences(fake, docEvent, ['category', 'pool'], /^sendproof_/)).toEqual(none);
      expect(reading(parseSendGridEvent(fake))).toEqual(reading(parseSendGridEvent(docEvent)));
      // the message id reads as the Mail Send answer gave it
      const parsed = parseSendGridEvent(fake);
      expect(parsed.kind === 'evidence' && parsed.evidence.providerMessageId).toBe(
        'sim_4f6a2c1e-8d2b-4c61-9a57-2f0c7c9d1e22',
      );
    });
  }

  const twilio = [
    ['sent', 'twilio/callback-sent'],
    ['delivered', 'twilio/callback-delivered'],
    ['failed', 'twilio/callback-undelivered'],
    ['expired', 'twilio/callback-failed'],
  ] as const;
  for (const [type, doc] of twilio) {
    it(`Twilio ${type}: the parameters and types of ${doc}, read the same`, () => {
      // Act
      const fake = twilioCallbackParams(event(type, 'sms'))!;
      const docParams = documented(doc) as Record<string, string>;
      const url = `https://evidence.example/twilio?k=${LABEL}`;

      // Assess
      expect(differences(fake, docParams)).toEqual(none);
      expect(reading(parseTwilioCallback(fake, url))).toEqual(reading(parseTwilioCallback(docParams, url)));
    });
  }
});
