import { describe, expect, it } from 'vitest';
import { summarise } from '../../../cli/commands/dlq.js';
import { MARKERS, resetIntent } from '../../support/fixtures.js';

describe('dlq list summary', () => {
  it('shows only the identifiers the shared filter keeps: never an address in eventId or purpose', () => {
    // Prepare: a dead message whose eventId is an email address and whose purpose is a phone number
    const body = JSON.stringify({ ...resetIntent({}), eventId: MARKERS.email, purpose: MARKERS.phone });
    // Act
    const summary = summarise({ MessageId: 'm-1', Body: body, Attributes: { ApproximateReceiveCount: '5' } });
    // Assess
    expect(summary).toMatchObject({ messageId: 'm-1', receiveCount: 5, bytes: Buffer.byteLength(body) });
    expect(summary.eventId).toBeUndefined();
    expect(summary.purpose).toBeUndefined();
    const text = JSON.stringify(summary);
    for (const secret of [MARKERS.email, MARKERS.phone, MARKERS.token]) expect(text).not.toContain(secret);
  });

  it('keeps well-formed identifiers an operator can search by', () => {
    // Act
    const summary = summarise({
      MessageId: 'm-2',
      Body: JSON.stringify(resetIntent({ eventId: 'rst_7f31' })),
    });
    // Assess
    expect(summary).toMatchObject({ eventId: 'rst_7f31', purpose: 'password-reset', tenant: 'acme-games' });
  });
});
