import { type ProviderEvidence, parseSesEvent } from '../lib/evidence/events.js';
import { labelKeyOf, sealLabel } from '../lib/transports/labels.js';

/**
 * The evidence SES publishes for a message we sent, parsed as the recorder receives it: `mail.messageId`
 * the row's provider message id and `mail.tags` the row's sealed label under the deployment's
 * content-hash secret (lib/transports/labels.ts), as the SES event publishing docs show the event
 * (docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-contents.html). `extra` adds the
 * event type's own object (e.g. `delivery`).
 */
export const sesEvidence = (
  row: { pk: string; providerMessageId?: string },
  eventType: 'Send' | 'Delivery',
  options: { labelSecret: string; at?: number; extra?: Record<string, unknown> },
): ProviderEvidence => {
  const parsed = parseSesEvent({
    eventType,
    mail: {
      messageId: row.providerMessageId ?? 'none',
      timestamp: new Date(options.at ?? Date.now()).toISOString(),
      tags: { 'sendproof-key': [sealLabel(labelKeyOf(options.labelSecret), row.pk)] },
    },
    ...options.extra,
  });
  if (parsed.kind !== 'evidence') throw new Error(`the SES ${eventType} event is not evidence`);
  return parsed.evidence;
};
