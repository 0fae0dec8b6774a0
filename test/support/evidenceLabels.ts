import { fixedLabelKeys } from '../../lib/evidence/labelAuth.js';
import { labelKeyOf, sealLabel } from '../../lib/transports/labels.js';

/**
 * What a provider echoes of a message we sent: its label (lib/transports/labels.ts), sealed under the
 * test deployment's secret (the dispatch harness's content-hash key), so events built here open in the
 * recorders tests build (`labels: testLabelKeys`). A test whose dispatcher uses another secret passes it. Tests pass the row to
 * build the event a real provider would send, or a bare row key for an event whose authentic label names
 * no row of ours (a row past its retention).
 */
export type Echoed = string | { pk: string };

export const TEST_LABEL_SECRET = 'test-content-hash-key-0123456789';
export const testLabelKeys = fixedLabelKeys(TEST_LABEL_SECRET);
export const TEST_LABEL_KEY = labelKeyOf(TEST_LABEL_SECRET);

/** The label the dispatcher sends for a row (or a row key). */
export const labelOf = (row: Echoed, secret = TEST_LABEL_SECRET): string =>
  sealLabel(labelKeyOf(secret), typeof row === 'string' ? row : row.pk);

/** SES `mail.tags` (arrays of values). */
export const sesTags = (row: Echoed, secret?: string): Record<string, string[]> => ({
  'sendproof-key': [labelOf(row, secret)],
});

/** SMS `context` (string values). */
export const smsContext = (row: Echoed, secret?: string): Record<string, string> => ({
  'sendproof-key': labelOf(row, secret),
});

/**
 * An SES configuration-set event about one of our rows, as EventBridge delivers it (the default bus's
 * `aws.ses` event: Amazon SES Developer Guide, "Monitoring email sending using Amazon SES event
 * publishing", EventBridge destination). `extra` adds the event type's own object (`delivery`, `bounce`);
 * `purposeTag` adds the `sendproof-purpose` tag the dispatcher sends with a purpose.
 */
export const sesEventBridgeEvent = (
  row: { pk: string; providerMessageId?: string; purpose?: string },
  eventType: string,
  options: { id: string; at: number; destination: string[]; purposeTag?: boolean; extra?: object },
) => ({
  version: '0',
  id: options.id,
  'detail-type': 'Email Delivered',
  source: 'aws.ses',
  detail: {
    eventType,
    mail: {
      timestamp: new Date(options.at).toISOString(),
      messageId: row.providerMessageId ?? `ses-${options.id}`,
      destination: options.destination,
      tags: {
        ...sesTags(row),
        ...(options.purposeTag ? { 'sendproof-purpose': [String(row.purpose)] } : {}),
      },
    },
    ...options.extra,
  },
});
