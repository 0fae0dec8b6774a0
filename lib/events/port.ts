import type { OutcomeEvent } from './outcomeEvent.js';

/**
 * Where outcome events go: an EventBridge bus in AWS (EventBridgeOutcomeSink), the local event bus in
 * the local stack (LocalEventBus). `publish` resolves when every event is durably with the bus, and
 * returns the ids it could not hand over (the consumer then retries the stream from there).
 */
export interface OutcomeEventSink {
  publish(events: readonly OutcomeEvent[]): Promise<{ failedIds: string[] }>;
}
