import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { OUTCOME_EVENT_SOURCE } from './outcomeConstants.js';
import type { OutcomeEvent } from './outcomeEvent.js';
import type { OutcomeEventSink } from './port.js';

/**
 * Outcome events onto an EventBridge bus: `source` sendproof, `detail-type` the event's `type`
 * (`notification.state.accepted`, `notification.fact.delivered`, …), `detail` the event itself, `time`
 * its time. A caller subscribes with a rule (e.g. `{ "detail": { "tenant": ["acme-games"] } }`).
 * PutEvents can accept part of a call: each failed entry (ErrorCode set) is returned by id so the
 * stream consumer checkpoints before it.
 */
export class EventBridgeOutcomeSink implements OutcomeEventSink {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
  ) {}

  async publish(events: readonly OutcomeEvent[]): Promise<{ failedIds: string[] }> {
    if (events.length === 0) return { failedIds: [] };
    const out = await this.client.send(
      new PutEventsCommand({
        Entries: events.map((event) => ({
          EventBusName: this.busName,
          Source: OUTCOME_EVENT_SOURCE,
          DetailType: event.type,
          Detail: JSON.stringify(event),
          Time: new Date(event.time),
          Resources: [],
        })),
      }),
    );
    // Entries come back in request order; a failed one carries ErrorCode instead of EventId.
    const failedIds = (out.Entries ?? [])
      .map((entry, i) => (entry.ErrorCode ? events[i]!.id : undefined))
      .filter((id): id is string => id !== undefined);
    if ((out.FailedEntryCount ?? 0) > 0 && failedIds.length === 0)
      return { failedIds: events.map((e) => e.id) };
    return { failedIds };
  }
}
