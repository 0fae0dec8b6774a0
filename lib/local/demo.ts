import { createHash } from 'node:crypto';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { clockedTimeline, formatGap } from '../console/clocks.js';
import type { IntentInput } from '../domain/intent.js';
import type { DeliveryRecord } from '../ledger/port.js';
import type { RunningProviderSimulator } from '../simulator/ProviderSimulator.js';

/** A tiny but real PDF: the health report the demo attaches by immutable reference and checksum. */
const REPORT_PDF = `%PDF-1.4
1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj
3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] >> endobj
trailer << /Root 1 0 R >>
%%EOF
`;

/** How far ahead the demo schedules its two receipts. */
export const DEMO_SCHEDULE_AHEAD_MS = 20_000;
/** The scheduled receipt that goes out when due. */
export const SCHEDULED_EVENT = 'pay_90210-ord_305';
/** The scheduled receipt whose payment the demo refunds at once: `sendproof cancel` withdraws it. */
export const REFUNDED_EVENT = 'pay_90211-ord_306';

/**
 * The three seed scenarios, plus one provider answer lost on the wire:
 * 1. a password reset by email with a 10-minute expiry (the token is a secret: rendered, never stored);
 * 2. a game receipt (template revision in the key);
 * 3. a health report whose email carries the PDF (verified by sha256) and falls back to SMS: its address is
 *    SES's mailbox-simulator bounce address, so with the SES transport the local SES event emitter reports
 *    a permanent bounce after SES accepted it, and the bounce moves the fallback on (the reset and the
 *    receipt are delivered: their Delivery events show on their rows);
 * 4. a reset code by SMS whose acceptance is dropped by the simulator (accept_then_drop): the row goes
 *    `unknown`, and the parked message's redelivery replays under the same enforced key;
 * 5. a receipt scheduled 20 s ahead on email and SMS: claimed `scheduled` at once, sent by the sweep;
 * 6. another receipt scheduled 20 s ahead, refunded at once (see REFUNDED_EVENT): both rows `cancelled`.
 */
export const prepareDemo = async (deps: {
  s3: S3Client;
  attachmentsBucket: string;
  simulator: RunningProviderSimulator;
  now: number;
}): Promise<IntentInput[]> => {
  const key = 'reports/report-42.pdf';
  await deps.s3.send(new PutObjectCommand({ Bucket: deps.attachmentsBucket, Key: key, Body: REPORT_PDF }));
  const sha256 = createHash('sha256').update(REPORT_PDF).digest('hex');
  const phone = '+15555550123';
  deps.simulator.addFault({ match: { channel: 'sms', to: '+15555550199' }, fault: 'accept_then_drop' });
  const scheduledReceipt = (eventId: string, orderId: string): IntentInput => ({
    eventId,
    purpose: 'receipt',
    tenant: 'acme-games',
    recipient: { ref: 'player-41', email: 'player41@example.com', phone: '+15555550141' },
    channels: ['email', 'sms'],
    template: { id: 'receipt', revision: 'v4' },
    data: {
      playerName: 'Rui',
      orderId,
      lines: [{ name: 'Season pass', amount: '19.99' }],
      total: '19.99',
      currency: 'EUR',
    },
    sendAt: new Date(deps.now + DEMO_SCHEDULE_AHEAD_MS).toISOString(),
  });
  return [
    scheduledReceipt(SCHEDULED_EVENT, 'ord_305'),
    scheduledReceipt(REFUNDED_EVENT, 'ord_306'),
    {
      eventId: 'rst_7f31',
      purpose: 'password-reset',
      tenant: 'acme-games',
      recipient: { ref: 'player-73', email: 'player73@example.com' },
      channels: ['email'],
      template: { id: 'password-reset', revision: 'v1' },
      data: { appName: 'Quest', resetUrl: 'https://quest.example/reset', expiresInMinutes: 10 },
      secrets: { token: 'demo-reset-token-9f2c41' },
      expiresAt: new Date(deps.now + 10 * 60_000).toISOString(),
    },
    {
      eventId: 'pay_84721-ord_219',
      purpose: 'receipt',
      tenant: 'acme-games',
      recipient: { ref: 'player-73', email: 'player73@example.com' },
      channels: ['email'],
      template: { id: 'receipt', revision: 'v4' },
      data: {
        playerName: 'Ana',
        orderId: 'ord_219',
        lines: [
          { name: 'Dragon skin', amount: '4.99' },
          { name: 'Gem pack (500)', amount: '9.99' },
        ],
        total: '14.98',
        currency: 'EUR',
      },
    },
    {
      eventId: 'report-42',
      purpose: 'health-report',
      tenant: 'clinic',
      recipient: { ref: 'patient-9', email: 'bounce@simulator.amazonses.com', phone },
      channels: ['email', 'sms'],
      delivery: 'fallback',
      template: { id: 'health-report', revision: 'v1' },
      data: { patientName: 'Bo', reportDate: '2026-11-30', portalUrl: 'https://clinic.example/r/42' },
      attachments: [
        {
          uri: `s3://${deps.attachmentsBucket}/${key}`,
          sha256,
          filename: 'report-42.pdf',
          contentType: 'application/pdf',
        },
      ],
    },
    {
      eventId: 'rst_8a02',
      purpose: 'password-reset',
      tenant: 'acme-games',
      recipient: { ref: 'player-88', phone: '+15555550199' },
      channels: ['sms'],
      template: { id: 'password-reset', revision: 'v1' },
      data: { appName: 'Quest', resetUrl: 'https://quest.example/reset', expiresInMinutes: 10 },
      secrets: { token: 'demo-reset-token-77aa01' },
      expiresAt: new Date(deps.now + 10 * 60_000).toISOString(),
    },
  ];
};

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The demo's one line per row: the ledger's acceptance (the ledger's clock), then what the provider said
 * (the provider's clock), each time labelled with its clock. A provider time earlier than the ledger's
 * acceptance is said to be so (a fast provider, or an answer lost on the wire), never shown as a
 * delivery that happened before its acceptance.
 */
export const demoTimeline = (row: DeliveryRecord): string => {
  const entries = clockedTimeline(row);
  const accepted = entries.find((e) => e.kind === 'transition' && e.what === 'accepted');
  const last = entries.filter((e) => e.kind === 'transition').at(-1);
  const head = accepted
    ? `accepted by ${row.transport ?? '?'} at ${iso(accepted.at)} (ledger clock; msg ${row.providerMessageId ?? '-'})`
    : `${row.state} at ${iso(last?.at ?? 0)} (ledger clock)`;
  const facts = entries
    .filter((e) => e.kind === 'fact')
    .map((f) => {
      const earlier =
        f.providerEarlierByMs !== undefined && f.recordedAfter
          ? `; ${formatGap(f.providerEarlierByMs)} before the ledger recorded ${f.recordedAfter.what}`
          : '';
      return `${f.what} at ${iso(f.at)} (provider clock; ${f.why ?? f.by}${earlier})`;
    });
  return [head, ...facts].join(' · ');
};
