import { describe, expect, it } from 'vitest';
import { parseIntent } from '../../../lib/domain/intent.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { healthReportIntent, MARKERS, receiptIntent, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

const clock = new ManualClock(Date.parse('2026-11-30T12:00:00Z'));
const deps = { purposes: new PurposeRegistry(), clock };
const fieldsOf = (raw: unknown): string[] => {
  const result = parseIntent(raw, deps);
  if (result.ok) throw new Error('expected the intent to be rejected');
  return result.error.issues.map((i) => i.field);
};

describe('intent boundary', () => {
  it('accepts the three seed intents and resolves their purpose policy', () => {
    // Prepare
    const intents = [resetIntent({}, clock.now()), receiptIntent(), healthReportIntent()];
    // Act
    const results = intents.map((i) => parseIntent(JSON.stringify(i), deps));
    // Assess
    expect(results.map((r) => r.ok && r.value.policy.purpose)).toEqual([
      'password-reset',
      'receipt',
      'health-report',
    ]);
    expect(results.map((r) => r.ok && r.value.delivery)).toEqual(['all', 'all', 'fallback']);
  });

  it('names the field for invalid JSON, unknown fields, bad dates and wrong types', () => {
    expect(fieldsOf('{"eventId": ')).toEqual(['(root)']);
    expect(fieldsOf('[1,2]')).toEqual(['(root)']);
    expect(fieldsOf({ ...resetIntent({}, clock.now()), surprise: 1 })).toEqual(['(root)']);
    expect(fieldsOf(resetIntent({ expiresAt: 'tomorrow' }, clock.now()))).toEqual(['expiresAt']);
    expect(fieldsOf({ ...resetIntent({}, clock.now()), channels: ['fax'] })).toEqual(['channels.0']);
    expect(fieldsOf({ ...resetIntent({}, clock.now()), recipient: { ref: 'a b' } })).toContain(
      'recipient.ref',
    );
  });

  it('says which unknown field it refused', () => {
    // Act
    const result = parseIntent({ ...resetIntent({}, clock.now()), surprise: 1 }, deps);
    // Assess
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.issues[0]?.message).toMatch(/surprise/);
  });

  it('refuses an intent that expired before it was published', () => {
    const expired = resetIntent({ expiresAt: new Date(clock.now() - 1000).toISOString() }, clock.now());
    expect(fieldsOf(expired)).toEqual(['expiresAt']);
  });

  it('requires an expiry for password resets and a contact for every requested channel', () => {
    const { expiresAt: _e, ...noExpiry } = resetIntent({}, clock.now());
    expect(fieldsOf(noExpiry)).toEqual(['expiresAt']);
    expect(fieldsOf(resetIntent({ channels: ['sms'], recipient: { ref: 'p1' } }, clock.now()))).toEqual([
      'recipient.phone',
    ]);
  });

  it('refuses oversized fields with the field named', () => {
    expect(fieldsOf(resetIntent({ eventId: 'e'.repeat(129) }, clock.now()))).toEqual(['eventId']);
    expect(fieldsOf(resetIntent({ data: { blob: 'x'.repeat(4097) } }, clock.now()))).toEqual(['data.blob']);
    expect(fieldsOf(JSON.stringify({ pad: 'x'.repeat(70_000) }))).toEqual(['(root)']);
  });

  it('refuses unregistered purposes, fallback with one channel, and attachments on a reset', () => {
    expect(fieldsOf(resetIntent({ purpose: 'marketing' }, clock.now()))).toEqual(['purpose']);
    expect(fieldsOf(healthReportIntent({ channels: ['email'] }))).toEqual(['channels']);
    const withAttachment = resetIntent({ attachments: healthReportIntent().attachments }, clock.now());
    expect(fieldsOf(withAttachment)).toEqual(['attachments']);
  });

  it('refuses fallback delivery on a purpose that does not fall back (its notifications have no flow)', () => {
    const receipt = receiptIntent({
      channels: ['email', 'sms'],
      delivery: 'fallback',
      recipient: { ref: 'player-73', email: 'a@example.com', phone: '+15555550123' },
    });
    expect(fieldsOf(receipt)).toEqual(['delivery']);
    for (const delivery of ['fallback', 'all'] as const)
      expect(parseIntent(JSON.stringify(healthReportIntent({ delivery })), deps).ok).toBe(true);
  });

  it('refuses an address in any key component: tenant, purpose, event id, ref or resend decision', () => {
    // Prepare: each of these would land in the partition key, every log line's dedupeKey and the archive
    const now = clock.now();
    const base = resetIntent({}, now);
    const cases = {
      eventId: resetIntent({ eventId: 'jane.doe@example.com' }, now),
      tenant: resetIntent({ tenant: 'jane+clinic@example.com' }, now),
      purpose: { ...base, purpose: 'password-reset+jane@example.com' },
      'recipient.ref': resetIntent({ recipient: { ref: '+15555550123' } }, now),
      'resendOf.decisionId': {
        ...base,
        resendOf: { dedupeKey: 'default:password-reset:e:u:email', decisionId: 'ops@example.com' },
      },
    };
    // Act and assess: a structured error naming the field, and not echoing the value
    for (const [field, intent] of Object.entries(cases)) {
      const result = parseIntent(JSON.stringify(intent), deps);
      expect(result.ok, field).toBe(false);
      if (result.ok) continue;
      expect(result.error.issues.map((i) => i.field)).toContain(field);
      expect(JSON.stringify(result.error.issues)).not.toContain('example.com');
      expect(result.error.issues.find((i) => i.field === field)?.message).toContain('no @ or +');
    }
    // A dotted id that is not an address is still a good key component.
    expect(parseIntent(JSON.stringify(resetIntent({ eventId: 'jane.doe.reset-1' }, now)), deps).ok).toBe(
      true,
    );
  });

  it('refuses a recipient ref that is the address itself, since the ref is stored and archived', () => {
    const now = clock.now();
    expect(
      fieldsOf(resetIntent({ recipient: { ref: 'alice@example.com', email: 'alice@example.com' } }, now)),
    ).toEqual(['recipient.ref']);
    expect(fieldsOf(resetIntent({ recipient: { ref: 'someone@else.example' } }, now))).toContain(
      'recipient.ref',
    );
    expect(
      fieldsOf(
        resetIntent({ channels: ['sms'], recipient: { ref: '15555550123', phone: '+15555550123' } }, now),
      ),
    ).toEqual(['recipient.ref']);
    // A numeric user id that is not the phone number is a perfectly good opaque ref.
    const ok = parseIntent(
      resetIntent({ channels: ['sms'], recipient: { ref: '4815162342', phone: '+15555550123' } }, now),
      deps,
    );
    expect(ok.ok).toBe(true);
  });

  it('never echoes a secret or an address in its error', () => {
    // Prepare: an invalid intent that carries both
    const bad = {
      ...resetIntent({}, clock.now()),
      recipient: { ref: 'p1', email: 'not-an-email' },
      extra: MARKERS.token,
    };
    // Act
    const result = parseIntent(bad, deps);
    // Assess
    const text = JSON.stringify(result.ok ? {} : result.error.toJSON());
    expect(text).not.toContain(MARKERS.token);
    expect(text).not.toContain('not-an-email');
  });

  it('sendAt: in the future, before expiresAt, within the horizon (30 days unless configured); the dispatcher accepts what waited too long', () => {
    // Prepare
    const at = (ms: number) => new Date(clock.now() + ms).toISOString();
    const day = 86_400_000;
    // Act & Assess
    const ok = parseIntent(receiptIntent({ sendAt: at(10 * 60_000) }), deps);
    expect(ok.ok && ok.value.sendAtMs).toBe(clock.now() + 10 * 60_000);
    expect(fieldsOf(receiptIntent({ sendAt: at(-1_000) }))).toEqual(['sendAt']);
    expect(fieldsOf(receiptIntent({ sendAt: at(31 * day) }))).toEqual(['sendAt']);
    expect(fieldsOf(receiptIntent({ sendAt: 'in 10 minutes' }))).toEqual(['sendAt']);
    expect(fieldsOf(resetIntent({ sendAt: at(11 * 60_000) }, clock.now()))).toEqual(['sendAt']);
    const narrow = parseIntent(receiptIntent({ sendAt: at(2 * day) }), { ...deps, scheduleHorizonMs: day });
    expect(!narrow.ok && narrow.error.issues).toEqual([
      { field: 'sendAt', message: 'is more than 1 days ahead (the scheduling horizon)' },
    ]);
    const late = parseIntent(receiptIntent({ sendAt: at(-60_000) }), { ...deps, allowExpired: true });
    expect(late.ok).toBe(true);
  });
});
