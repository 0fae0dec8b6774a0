import { billedWriteUnits, type CapacityTotals, emptyTotals } from '../harness/CapacityMeter.js';
import { hashKey } from '../lib/domain/keys.js';
import type { Channel } from '../lib/domain/purposes.js';
import type { DeliveryState } from '../lib/domain/states.js';
import { LOCAL_CONTENT_HASH_KEY } from '../lib/secrets/contentHashKey.js';
import type { FaultSpecInput } from '../lib/simulator/faults.js';
import { labelKeyOf, sealLabel } from '../lib/transports/labels.js';
import type { OutboundMessage, Transport } from '../lib/transports/port.js';
import { RestTransport } from '../lib/transports/RestTransport.js';
import {
  type BaselineChannel,
  PowertoolsStyleRecord,
  powertoolsTableInput,
  TransactHistoryLedger,
  transactHistoryTableInput,
} from './baselines.js';
import { runReconcilePass } from './reconcilePass.js';
import type { Approach, WriteUnitRow } from './results.js';
import {
  type BenchDynamo,
  benchAttachment,
  benchEmail,
  createLedgerTables,
  createTable,
  fallbackIntentBody,
  resetIntentBody,
  type SimulatorProcess,
  wireDispatcher,
} from './stack.js';
import { ratio } from './stats.js';

/** The four workloads, as the provider (simulator) will behave for each notification. */
export interface Scenario {
  name: 'happy' | 'retry_after_429' | 'unknown_reconciled' | 'fallback_email_to_sms';
  delivery: 'all' | 'fallback';
  /** The fault for this notification's email address; SMS is never faulted. */
  fault?: (email: string) => FaultSpecInput;
  /** Final state per channel row, in order, once the scenario is done. */
  expected: DeliveryState[];
}

export const SCENARIOS: readonly Scenario[] = [
  { name: 'happy', delivery: 'all', expected: ['accepted'] },
  {
    name: 'retry_after_429',
    delivery: 'all',
    fault: (to) => ({ match: { to }, fault: 'status_429', times: 1, retryAfterSeconds: 0 }),
    expected: ['accepted'],
  },
  {
    name: 'unknown_reconciled',
    delivery: 'all',
    fault: (to) => ({ match: { to }, fault: 'accept_then_drop', times: 1 }),
    expected: ['accepted'],
  },
  {
    name: 'fallback_email_to_sms',
    delivery: 'fallback',
    fault: (to) => ({ match: { to }, fault: 'reject', times: 1 }),
    expected: ['rejected', 'accepted'],
  },
];

const addTotals = (a: CapacityTotals, b: CapacityTotals): CapacityTotals => ({
  writeUnits: a.writeUnits + b.writeUnits,
  transactWriteUnits: a.transactWriteUnits + b.transactWriteUnits,
  writeRequests: a.writeRequests + b.writeRequests,
  readUnits: a.readUnits + b.readUnits,
  readRequests: a.readRequests + b.readRequests,
});

const row = (
  scenario: Scenario,
  approach: Approach,
  notifications: number,
  totals: CapacityTotals,
  historyEntries: number,
  note?: string,
): WriteUnitRow => ({
  scenario: scenario.name,
  approach,
  notifications,
  writeUnits: totals.writeUnits,
  billedWriteUnits: billedWriteUnits(totals),
  writeRequests: totals.writeRequests,
  readUnits: totals.readUnits,
  perNotification: ratio(totals.writeUnits, notifications),
  billedPerNotification: ratio(billedWriteUnits(totals), notifications),
  historyEntries: ratio(historyEntries, notifications),
  ...(note ? { note } : {}),
});

/** The real dispatcher (and the reconciler for the unknown scenario), metered per notification. */
const runLedger = async (
  dynamo: BenchDynamo,
  sim: SimulatorProcess,
  scenario: Scenario,
  count: number,
): Promise<WriteUnitRow> => {
  const tables = await createLedgerTables(dynamo.raw, `wu-${scenario.name.replace(/_/g, '-')}`);
  const wiring = wireDispatcher({ doc: dynamo.doc, simulatorUrl: sim.url, ...tables });
  const attachment = benchAttachment();
  let totals = emptyTotals();
  let history = 0;
  for (let i = 0; i < count; i++) {
    const id = `wu-ledger-${scenario.name}-${i}`;
    const email = benchEmail(id);
    if (scenario.fault) await sim.addFault(scenario.fault(email));
    const body =
      scenario.delivery === 'fallback'
        ? fallbackIntentBody(id, attachment, email)
        : resetIntentBody(id, email);
    const measured = await dynamo.meter.measure(async () => {
      const outcome = await wiring.dispatcher.handle(body, { messageId: id });
      if (scenario.name === 'unknown_reconciled') await runReconcilePass(wiring.ledger, wiring.transports);
      return outcome;
    });
    totals = addTotals(totals, measured.totals);
    // Verification reads happen outside the metered window.
    const rows = await Promise.all(measured.value.channels.map((c) => wiring.ledger.get(c.dedupeKey)));
    const states = rows.map((r) => r?.state);
    if (JSON.stringify(states) !== JSON.stringify(scenario.expected))
      throw new Error(
        `${scenario.name}: ledger rows ended ${states.join(',')}, expected ${scenario.expected.join(',')}`,
      );
    history += rows.reduce((sum, r) => sum + (r?.history.length ?? 0), 0);
  }
  return row(scenario, 'sendproof-ledger', count, totals, history);
};

// The production key hash (64 hex), so baseline rows are the size real rows are.
const keyHash = hashKey;

/** The same provider calls the dispatcher makes, without the dispatcher: one channel for a baseline. */
const baselineChannel = (
  transport: Transport,
  key: string,
  to: string,
  channel: Channel,
): BaselineChannel => {
  const message: OutboundMessage = {
    channel,
    to,
    ...(channel === 'email' ? { subject: 'Your report' } : {}),
    text: 'benchmark message',
    dedupeKey: key,
    label: sealLabel(labelKeyOf(LOCAL_CONTENT_HASH_KEY), key),
  };
  const idempotencyKey = keyHash(key);
  return {
    key,
    send: () => transport.send(message, idempotencyKey),
    lookup: () => transport.lookup!(idempotencyKey),
  };
};

const runBaseline = async (
  dynamo: BenchDynamo,
  sim: SimulatorProcess,
  scenario: Scenario,
  approach: Exclude<Approach, 'sendproof-ledger'>,
  count: number,
): Promise<WriteUnitRow> => {
  const table = await createTable(
    dynamo.raw,
    approach === 'powertools-style' ? powertoolsTableInput : transactHistoryTableInput,
    `wu-${approach}-${scenario.name.replace(/_/g, '-')}`,
  );
  const transports = {
    email: new RestTransport({ baseUrl: sim.url, channel: 'email' }),
    sms: new RestTransport({ baseUrl: sim.url, channel: 'sms' }),
  };
  const powertools = new PowertoolsStyleRecord(dynamo.doc, table);
  const transact = new TransactHistoryLedger(dynamo.doc, table);
  let totals = emptyTotals();
  let history = 0;
  let resends = 0;
  for (let i = 0; i < count; i++) {
    const id = `wu-${approach}-${scenario.name}-${i}`;
    const email = benchEmail(id);
    if (scenario.fault) await sim.addFault(scenario.fault(email));
    const order: Channel[] = scenario.delivery === 'fallback' ? ['email', 'sms'] : ['email'];
    const channels = order.map((channel) =>
      baselineChannel(
        transports[channel],
        `bench:${id}:${channel}`,
        channel === 'email' ? email : '+15555550100',
        channel,
      ),
    );
    const measured = await dynamo.meter.measure(() =>
      approach === 'powertools-style'
        ? powertools.deliver(channels, scenario.delivery)
        : transact.deliver(`bench:${id}`, channels, scenario.delivery, {
            tenant: 'bench',
            purpose: scenario.delivery === 'fallback' ? 'health-report' : 'password-reset',
            eventId: id,
            recipientRef: `user-${id}`,
            idempotencyKey: keyHash(id),
            policyVersion: 'password-reset/1',
            templateId: 'password-reset',
            templateRevision: 'v1',
          }),
    );
    totals = addTotals(totals, measured.totals);
    history += measured.value.historyEntries;
    resends += measured.value.sends - order.length;
    const final = measured.value.results.map((r) => (r === 'accepted' ? 'accepted' : 'rejected'));
    if (JSON.stringify(final) !== JSON.stringify(scenario.expected))
      throw new Error(
        `${approach} ${scenario.name}: ended ${final.join(',')}, expected ${scenario.expected.join(',')}`,
      );
  }
  const notes: string[] = [];
  if (approach === 'powertools-style') {
    notes.push('no history');
    if (scenario.name === 'unknown_reconciled')
      notes.push(`lost answer resent blindly (${resends} resends; safe only under a provider-enforced key)`);
    if (scenario.delivery === 'fallback') notes.push('fallback pointer not durable');
  }
  if (approach === 'transact-history') notes.push('no attention index');
  return row(scenario, approach, count, totals, history, notes.join('; '));
};

/** Every scenario through the ledger and both baselines; `count` notifications each. */
export const measureWriteUnits = async (
  dynamo: BenchDynamo,
  sim: SimulatorProcess,
  count: number,
  progress: (line: string) => void,
): Promise<WriteUnitRow[]> => {
  const rows: WriteUnitRow[] = [];
  for (const scenario of SCENARIOS) {
    rows.push(await runLedger(dynamo, sim, scenario, count));
    for (const approach of ['powertools-style', 'transact-history'] as const)
      rows.push(await runBaseline(dynamo, sim, scenario, approach, count));
    const [ledger] = rows.filter((r) => r.scenario === scenario.name);
    progress(`write units: ${scenario.name} done (ledger ${ledger?.perNotification} WCU/notification)`);
  }
  return rows;
};
