import { sesEvidence } from '../harness/sesEvents.js';
import { sqsBatch } from '../harness/sqsEvents.js';
import { createSqsHandler } from '../lib/dispatch/sqsHandler.js';
import { systemClock } from '../lib/domain/clock.js';
import { PurposeRegistry } from '../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../lib/evidence/EvidenceRecorder.js';
import { fixedLabelKeys } from '../lib/evidence/labelAuth.js';
import { DynamoSuppressionList } from '../lib/ledger/DynamoSuppressionList.js';
import type { DeliveryRecord } from '../lib/ledger/port.js';
import { LOCAL_CONTENT_HASH_KEY } from '../lib/secrets/contentHashKey.js';
import type { ProtocolFloorResult } from './results.js';
import {
  type BenchDynamo,
  benchEmail,
  createLedgerTables,
  resetIntentBody,
  type SimulatorProcess,
  wireDispatcher,
} from './stack.js';
import { ratio } from './stats.js';

/** The intake queue's batch (lib/queueDefinition.ts INTAKE_QUEUE.batchSize) and the default record concurrency. */
const BATCH = 10;
const RECORD_CONCURRENCY = 5;

/**
 * The happy path as AWS runs it: SQS batches of 10 through the real SQS handler (suppression and flow
 * pointers read once per batch), the claim written as `dispatching`, the provider call, the outcome;
 * every DynamoDB request metered with ReturnConsumedCapacity. Then the evidence a configuration set
 * sends for each accepted email (Send, Delivery), recorded by the real recorder, metered per event.
 */
export const measureProtocolFloor = async (
  dynamo: BenchDynamo,
  sim: SimulatorProcess,
  batches: number,
  progress: (line: string) => void,
): Promise<ProtocolFloorResult> => {
  const tables = await createLedgerTables(dynamo.raw, 'floor');
  const wiring = wireDispatcher({ doc: dynamo.doc, simulatorUrl: sim.url, ...tables });
  const handler = createSqsHandler(wiring.dispatcher, { concurrency: RECORD_CONCURRENCY });
  const ids: string[] = [];
  let dispatch = { writeRequests: 0, writeUnits: 0, readRequests: 0, readUnits: 0 };
  for (let b = 0; b < batches; b++) {
    const batchIds = Array.from({ length: BATCH }, (_, i) => `floor-${b}-${i}`);
    ids.push(...batchIds);
    const bodies = batchIds.map((id) => resetIntentBody(id, benchEmail(id)));
    const { value, totals } = await dynamo.meter.measure(() =>
      handler(sqsBatch(bodies, { idPrefix: `floor-${b}-`, senderId: 'bench' })),
    );
    if (value.batchItemFailures.length) throw new Error(`protocol floor: batch ${b} had failures`);
    dispatch = {
      writeRequests: dispatch.writeRequests + totals.writeRequests,
      writeUnits: dispatch.writeUnits + totals.writeUnits,
      readRequests: dispatch.readRequests + totals.readRequests,
      readUnits: dispatch.readUnits + totals.readUnits,
    };
  }
  const rows = await Promise.all(
    ids.map((id) => wiring.ledger.get(`bench:password-reset:${id}:user-${id}:email`)),
  );
  const accepted = rows.filter((r): r is DeliveryRecord => r?.state === 'accepted');
  if (accepted.length !== ids.length)
    throw new Error(`protocol floor: ${accepted.length} of ${ids.length} rows accepted`);
  const recorder = new EvidenceRecorder({
    labels: fixedLabelKeys(LOCAL_CONTENT_HASH_KEY),
    ledger: wiring.ledger,
    store: new DynamoEvidenceStore(dynamo.doc, tables.ledgerTable),
    suppressions: new DynamoSuppressionList(dynamo.doc, tables.suppressionTable),
    purposes: new PurposeRegistry(),
    clock: systemClock,
  });
  const evidence = await dynamo.meter.measure(async () => {
    for (const row of accepted) {
      for (const type of ['Send', 'Delivery'] as const) {
        const result = await recorder.record(sesEvidence(row, type, { labelSecret: LOCAL_CONTENT_HASH_KEY }));
        // The Send of the message an accepted row records adds nothing: no write (facts.ts addsNothing).
        const expected = type === 'Send' ? 'redundant' : 'fact_recorded';
        if (result.kind !== expected) throw new Error(`protocol floor: evidence ${type} ${result.kind}`);
      }
    }
  });
  const n = ids.length;
  const events = accepted.length * 2;
  const result: ProtocolFloorResult = {
    notifications: n,
    batchSize: BATCH,
    ...dispatch,
    requestsPerNotification: ratio(dispatch.writeRequests + dispatch.readRequests, n),
    writesPerNotification: ratio(dispatch.writeRequests, n),
    writeUnitsPerNotification: ratio(dispatch.writeUnits, n),
    readUnitsPerNotification: ratio(dispatch.readUnits, n),
    transitionsPerNotification: ratio(
      accepted.reduce((sum, r) => sum + r.history.length, 0),
      n,
    ),
    evidence: {
      eventsPerNotification: events / n,
      requestsPerEvent: ratio(evidence.totals.writeRequests + evidence.totals.readRequests, events),
      writeUnitsPerEvent: ratio(evidence.totals.writeUnits, events),
      readUnitsPerEvent: ratio(evidence.totals.readUnits, events),
    },
  };
  progress(
    `protocol floor: ${result.writesPerNotification} writes, ${result.writeUnitsPerNotification} WCU, ${result.requestsPerNotification} DynamoDB requests per notification (${n} in batches of ${BATCH}); evidence ${result.evidence.writeUnitsPerEvent} WCU + ${result.evidence.readUnitsPerEvent} RCU per event`,
  );
  return result;
};
