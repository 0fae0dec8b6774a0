import type { Channel } from '../../lib/domain/purposes.js';
import type {
  OutboundMessage,
  SendResult,
  Transport,
  TransportCapabilities,
} from '../../lib/transports/port.js';

/**
 * A test double of a provider in the test's own process (no HTTP): it accepts every message, enforces
 * the idempotency key (a repeat of a key returns the first message id, marked replayed) and records
 * every call, so a decision test can say what was sent without starting a server.
 */
export class RecordingTransport implements Transport {
  readonly name = 'recording';
  readonly capabilities: TransportCapabilities = {
    idempotencyKey: true,
    keyRetentionSeconds: 86_400,
    lookupByKey: false,
    lookupByProviderId: false,
    cancel: false,
    pushEvidence: false,
  };
  readonly calls: Array<{ message: OutboundMessage; idempotencyKey: string }> = [];
  private readonly ids = new Map<string, string>();

  constructor(readonly channel: Channel) {}

  async send(message: OutboundMessage, idempotencyKey: string): Promise<SendResult> {
    this.calls.push({ message, idempotencyKey });
    const seen = this.ids.get(idempotencyKey);
    if (seen) return { kind: 'accepted', providerMessageId: seen, replayed: true };
    const id = `${this.channel}-${this.ids.size + 1}`;
    this.ids.set(idempotencyKey, id);
    return { kind: 'accepted', providerMessageId: id };
  }

  /** Distinct messages accepted (a keyed replay is not a second message). */
  accepted(): number {
    return this.ids.size;
  }
}
