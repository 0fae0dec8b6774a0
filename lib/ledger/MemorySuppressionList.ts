import type { Channel } from '../domain/purposes.js';
import { suppressionReason } from './DynamoGateFacts.js';
import type { SuppressionDetails, SuppressionList } from './port.js';

/**
 * The suppression list in memory, for decision tests that need no server: the same answers as
 * DynamoSuppressionList (a channel or `*`; a repeat keeps the first reason), read through the same
 * `suppressionReason`.
 */
export class MemorySuppressionList implements SuppressionList {
  private readonly channels = new Map<string, Record<string, { reason: string } & SuppressionDetails>>();

  async isSuppressed(tenant: string, recipientRef: string, channel: Channel) {
    const reason = suppressionReason(this.channels.get(`${tenant}:${recipientRef}`), channel);
    return reason ? { suppressed: true, reason } : { suppressed: false };
  }

  async suppress(
    tenant: string,
    recipientRef: string,
    channel: Channel | '*',
    reason: string,
    details: SuppressionDetails = { source: 'unspecified', at: Date.now(), by: 'unspecified' },
  ): Promise<void> {
    const key = `${tenant}:${recipientRef}`;
    const entry = this.channels.get(key) ?? {};
    entry[channel] ??= { reason, ...details };
    this.channels.set(key, entry);
  }
}
