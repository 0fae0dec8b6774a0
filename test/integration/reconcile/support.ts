import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../../../lib/domain/clock.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import type { Ledger } from '../../../lib/ledger/port.js';
import { type ReconcileMetricsSink, Reconciler } from '../../../lib/reconcile/Reconciler.js';
import type { Transport } from '../../../lib/transports/port.js';

/** A provider like SES or SMS v2, over the same HTTP transport: no keys, no lookup, events pushed later. */
export const pushEvidenceOnly = (transport: Transport): Transport => ({
  name: transport.name,
  channel: transport.channel,
  capabilities: {
    ...transport.capabilities,
    idempotencyKey: false,
    keyRetentionSeconds: 0,
    lookupByKey: false,
    lookupByProviderId: false,
    pushEvidence: true,
  },
  send: (message, key) => transport.send(message, key),
});

/** A provider that can be asked what happened but does not enforce keys. */
export const lookupWithoutKeys = (transport: Transport): Transport => ({
  name: transport.name,
  channel: transport.channel,
  capabilities: { ...transport.capabilities, idempotencyKey: false, keyRetentionSeconds: 0 },
  send: (message, key) => transport.send(message, key),
  ...(transport.lookup ? { lookup: (key, id) => transport.lookup!(key, id) } : {}),
});

/** The same transport, counting the lookups made through it (the provider is still called for real). */
export const countingLookups = (transport: Transport): Transport & { lookups: number } => {
  const counted = {
    name: transport.name,
    channel: transport.channel,
    capabilities: transport.capabilities,
    send: transport.send.bind(transport),
    lookups: 0,
    lookup: async (key: string, id?: string) => {
      counted.lookups += 1;
      return transport.lookup!(key, id);
    },
  };
  return counted;
};

/** Collects metrics as the function's Powertools sink would receive them. */
export class RecordingMetrics implements ReconcileMetricsSink {
  readonly counts: Array<{ name: string; value: number; dimensions?: Readonly<Record<string, string>> }> = [];
  readonly gauges = new Map<string, number>();
  count = (name: string, value = 1, dimensions?: Readonly<Record<string, string>>) => {
    this.counts.push({ name, value, ...(dimensions ? { dimensions } : {}) });
  };
  gauge = (name: string, value: number) => {
    this.gauges.set(name, value);
  };
}

export const reconcilerFor = (
  ledger: Ledger,
  transports: { email: Transport; sms: Transport },
  clock: Clock,
  runId = 'test',
  metrics?: ReconcileMetricsSink,
) =>
  new Reconciler({
    ledger,
    transports,
    purposes: new PurposeRegistry(),
    clock,
    runId,
    ...(metrics ? { metrics } : {}),
  });

/**
 * Counts the DynamoDB operations a client sends and the read capacity they report: middleware on the
 * real client talking to DynamoDB Local, so the figure is what the server charged, not an estimate.
 */
export const meterDynamo = (doc: DynamoDBDocumentClient) => {
  const meter = { commands: new Map<string, number>(), readUnits: 0, writeUnits: 0 };
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String((context as { commandName?: string }).commandName ?? 'unknown');
      meter.commands.set(name, (meter.commands.get(name) ?? 0) + 1);
      const out = await next(args);
      const capacity = (out.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity;
      if (name === 'QueryCommand' || name === 'GetCommand' || name === 'GetItemCommand')
        meter.readUnits += capacity?.CapacityUnits ?? 0;
      else meter.writeUnits += capacity?.CapacityUnits ?? 0;
      return out;
    },
    { step: 'initialize', name: 'sendproofMeter' },
  );
  return meter;
};
