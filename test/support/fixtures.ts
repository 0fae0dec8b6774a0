import type { IntentInput } from '../../lib/domain/intent.js';

/** Marker values a secret scan looks for: none may ever reach the ledger, a log or the archive. */
export const MARKERS = {
  token: 'TOKEN-7f31-SECRET-do-not-store',
  email: 'alice.marker@example.com',
  phone: '+15555550123',
  otp: '493817',
};

export const resetIntent = (overrides: Partial<IntentInput> = {}, now = Date.now()): IntentInput => ({
  eventId: 'rst_7f31',
  purpose: 'password-reset',
  recipient: { ref: 'player-73', email: MARKERS.email, phone: MARKERS.phone },
  channels: ['email'],
  template: { id: 'password-reset', revision: 'v1' },
  data: { appName: 'Quest', resetUrl: 'https://quest.example/reset', expiresInMinutes: 10 },
  secrets: { token: MARKERS.token },
  expiresAt: new Date(now + 10 * 60_000).toISOString(),
  tenant: 'acme-games',
  ...overrides,
});

export const receiptIntent = (overrides: Partial<IntentInput> = {}): IntentInput => ({
  eventId: 'pay_84721-ord_219',
  purpose: 'receipt',
  recipient: { ref: 'player-73', email: MARKERS.email },
  channels: ['email'],
  template: { id: 'receipt', revision: 'v4' },
  data: {
    playerName: 'Ana',
    orderId: 'ord_219',
    lines: [{ name: 'Dragon skin', amount: '4.99' }],
    total: '4.99',
    currency: 'EUR',
  },
  tenant: 'acme-games',
  ...overrides,
});

export const healthReportIntent = (overrides: Partial<IntentInput> = {}): IntentInput => ({
  eventId: 'report-42',
  purpose: 'health-report',
  recipient: { ref: 'patient-9', email: MARKERS.email, phone: MARKERS.phone },
  channels: ['email', 'sms'],
  template: { id: 'health-report', revision: 'v1' },
  data: { patientName: 'Bo', reportDate: '2026-11-30', portalUrl: 'https://clinic.example/r/42' },
  attachments: [
    {
      uri: 'file:///tmp/report-42.pdf',
      sha256: 'a'.repeat(64),
      filename: 'report-42.pdf',
      contentType: 'application/pdf',
    },
  ],
  tenant: 'clinic',
  ...overrides,
});
