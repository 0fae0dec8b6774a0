import { describe, expect, it } from 'vitest';
import { contentHash } from '../../../lib/domain/content.js';
import { parseIntent, type ValidIntent } from '../../../lib/domain/intent.js';
import {
  deriveDedupeKey,
  hashKey,
  identityOf,
  LABEL_KEY_MAX_BYTES,
  labelCarriesKey,
  parseDedupeKey,
} from '../../../lib/domain/keys.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { labelKeyOf, openLabel, sealLabel } from '../../../lib/transports/labels.js';
import { receiptIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

const clock = new ManualClock();
const valid = (raw: unknown): ValidIntent => {
  const r = parseIntent(raw, { purposes: new PurposeRegistry(), clock });
  if (!r.ok) throw r.error;
  return r.value;
};
const keyOf = (v: ValidIntent, channel: 'email' | 'sms' = 'email') =>
  deriveDedupeKey(identityOf(v.intent, v.policy, channel));

describe('dedupe key', () => {
  it('is the same for a redelivery with a different caller intent id and body order', () => {
    // Prepare
    const a = valid(resetIntent({ intentId: 'first-envelope' }, clock.now()));
    const b = valid(JSON.parse(JSON.stringify(resetIntent({ intentId: 'second-envelope' }, clock.now()))));
    // Act / Assess
    expect(keyOf(a)).toEqual(keyOf(b));
    expect(keyOf(a).readable).toBe('acme-games:password-reset:rst_7f31:player-73:email');
    expect(keyOf(a).hash).toMatch(/^[a-f0-9]{64}$/);
  });

  it('separates channels, recipients and events', () => {
    const base = valid(resetIntent({ channels: ['email', 'sms'] }, clock.now()));
    const otherRecipient = valid(
      resetIntent({ recipient: { ref: 'player-74', email: 'b@example.com' } }, clock.now()),
    );
    const otherEvent = valid(resetIntent({ eventId: 'rst_8000' }, clock.now()));
    const keys = [keyOf(base), keyOf(base, 'sms'), keyOf(otherRecipient), keyOf(otherEvent)].map(
      (k) => k.readable,
    );
    expect(new Set(keys).size).toBe(4);
  });

  it('puts the template revision in the key for receipts but not for password resets', () => {
    const v4 = valid(receiptIntent());
    const v5 = valid(receiptIntent({ template: { id: 'receipt', revision: 'v5' } }));
    const r1 = valid(resetIntent({}, clock.now()));
    const r2 = valid(resetIntent({ template: { id: 'password-reset', revision: 'v2' } }, clock.now()));
    expect(keyOf(v4).readable).not.toBe(keyOf(v5).readable);
    expect(keyOf(v4).readable).toContain(':rev=v4');
    expect(keyOf(r1).readable).toBe(keyOf(r2).readable);
  });

  it('gives an operator-approved resend a new key that names its decision', () => {
    const original = valid(resetIntent({}, clock.now()));
    const resend = valid(
      resetIntent({ resendOf: { dedupeKey: keyOf(original).readable, decisionId: 'dec-1' } }, clock.now()),
    );
    expect(keyOf(resend).readable).toBe(`${keyOf(original).readable}:resend=dec-1`);
    expect(parseDedupeKey(keyOf(resend).readable)).toMatchObject({
      channel: 'email',
      resendDecisionId: 'dec-1',
    });
  });
});

describe('content hash', () => {
  const content = { channel: 'sms' as const, text: 'Your code is 493817\r\n' };

  it('is keyed: a different key gives a different hash, so a 6-digit OTP cannot be brute-forced', () => {
    expect(contentHash(content, 'key-one-0123456789')).not.toBe(contentHash(content, 'key-two-0123456789'));
  });

  it('ignores line-ending and trailing-space differences but not content differences', () => {
    const key = 'k'.repeat(32);
    expect(contentHash(content, key)).toBe(contentHash({ ...content, text: 'Your code is 493817  \n' }, key));
    expect(contentHash(content, key)).not.toBe(contentHash({ ...content, text: 'Your code is 493818' }, key));
  });

  it('changes when an attachment checksum changes', () => {
    const key = 'k'.repeat(32);
    const a = {
      channel: 'email' as const,
      text: 'hi',
      attachments: [{ filename: 'r.pdf', contentType: 'application/pdf', sha256: 'a'.repeat(64) }],
    };
    const b = { ...a, attachments: [{ ...a.attachments[0]!, sha256: 'b'.repeat(64) }] };
    expect(contentHash(a, key)).not.toBe(contentHash(b, key));
  });
});

describe('row label', () => {
  it("seals a readable key into the providers' tag alphabet, and opens it only under the same secret", () => {
    // Prepare
    const readable = 'acme-games:receipt:pay_84721:player-7:email:rev=3.1';
    const ours = labelKeyOf('deployment-a-secret-0123456789');
    const theirs = labelKeyOf('deployment-b-secret-0123456789');
    // Act
    const label = sealLabel(ours, readable);
    // Assess
    expect(label).toMatch(/^[A-Za-z0-9_-]{1,256}$/);
    expect(label).not.toContain(Buffer.from('acme-games').toString('base64url').slice(0, 8));
    expect(sealLabel(ours, readable)).toBe(label);
    expect(openLabel(ours, label)).toEqual({ idempotencyKey: hashKey(readable), rowKey: readable });
    expect(openLabel(theirs, label)).toBeUndefined();
    expect(openLabel(ours, hashKey(readable))).toBeUndefined();
    expect(openLabel(ours, `${label.slice(0, -2)}${label.endsWith('A') ? 'B' : 'A'}A`)).toBeUndefined();
  });

  it('carries keys up to 175 bytes; a longer key is labelled by its hash and needs the pointer', () => {
    // Prepare
    const key = labelKeyOf('deployment-a-secret-0123456789');
    // Act
    const longest = sealLabel(key, 'k'.repeat(LABEL_KEY_MAX_BYTES));
    const longer = sealLabel(key, 'k'.repeat(LABEL_KEY_MAX_BYTES + 1));
    // Assess
    expect(longest).toHaveLength(256);
    expect(labelCarriesKey('k'.repeat(LABEL_KEY_MAX_BYTES))).toBe(true);
    expect(labelCarriesKey('k'.repeat(LABEL_KEY_MAX_BYTES + 1))).toBe(false);
    expect(openLabel(key, longer)).toEqual({ idempotencyKey: hashKey('k'.repeat(LABEL_KEY_MAX_BYTES + 1)) });
    expect(longer.length).toBeLessThan(100);
  });
});
