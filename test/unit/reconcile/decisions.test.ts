import { beforeEach, describe, expect, it } from 'vitest';
import { buildClaimRecord } from '../../../lib/dispatch/claimRecord.js';
import { parseIntent } from '../../../lib/domain/intent.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { MemoryLedger } from '../../../lib/ledger/MemoryLedger.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import { DecisionRefusedError, OperatorDecisions } from '../../../lib/reconcile/OperatorDecisions.js';
import { MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';

// Decisions only, on the in-memory ledger (same contract as DynamoDB Local). Resends, the fallback
// advance and the publish path stay in test/integration/reconcile/decisions.test.ts.
const clock = new ManualClock(Date.now());
const purposes = new PurposeRegistry();
let ledger: MemoryLedger;
let seq = 0;

const decisions = (decisionId = `dec-${++seq}`) =>
  new OperatorDecisions({ ledger, purposes, clock, newDecisionId: () => decisionId });

/** A lost answer with nothing to ask: the row the reconciler leaves quarantined, as an operator finds it. */
const quarantinedReset = async (eventId: string): Promise<{ row: DeliveryRecord }> => {
  const parsed = parseIntent(resetIntent({ eventId }, clock.now()), { purposes, clock });
  if (!parsed.ok) throw parsed.error;
  const claim = buildClaimRecord({
    valid: parsed.value,
    channel: 'email',
    contentHash: 'h'.repeat(16),
    templateOwner: 'application',
    workerId: 'dispatch:test',
    now: clock.now(),
    leaseMs: 60_000,
    initial: { state: 'dispatching', why: 'gates_passed', transport: 'rest' },
  });
  await ledger.claim(claim);
  const steps = [
    { from: 'dispatching', to: 'unknown', by: 'dispatch:test', why: 'provider_timeout_after_send' },
    { from: 'unknown', to: 'quarantined', by: 'reconciler:test', why: 'no_evidence_possible' },
  ] as const;
  for (const [i, step] of steps.entries()) {
    const out = await ledger.transition({ pk: claim.pk, expectedVersion: i + 1, now: clock.now(), ...step });
    if (out.kind !== 'ok') throw new Error(`could not move ${claim.pk} to ${step.to}`);
  }
  const row = (await ledger.get(claim.pk))!;
  expect(row.state).toBe('quarantined');
  return { row };
};

beforeEach(() => {
  clock.set(Date.now());
  ledger = new MemoryLedger();
});

describe('operator decisions', () => {
  it('accepted: recorded as resolved_accepted with the operator and the reason; a second decision is refused', async () => {
    // Prepare
    const { row } = await quarantinedReset('op-accept');
    // Act
    const result = await decisions().decide({
      dedupeKey: row.pk,
      outcome: 'accepted',
      reason: 'seen in the provider dashboard',
      operator: 'bo',
    });
    const again = decisions().decide({
      dedupeKey: row.pk,
      outcome: 'rejected',
      reason: 'changed my mind',
      operator: 'bo',
    });
    // Assess
    expect(result.state).toBe('resolved_accepted');
    await expect(again).rejects.toBeInstanceOf(DecisionRefusedError);
    const after = await ledger.get(row.pk);
    expect(after?.history.at(-1)).toMatchObject({ s: 'resolved_accepted', by: 'operator:bo' });
    expect(after?.history.filter((e) => e.by.startsWith('operator:'))).toHaveLength(1);
  });

  it('a reason holding an email address is refused before anything is written', async () => {
    // Prepare
    const { row } = await quarantinedReset('op-pii');
    // Act
    const attempt = decisions().decide({
      dedupeKey: row.pk,
      outcome: 'accepted',
      reason: `user ${MARKERS.email} confirmed`,
      operator: 'bo',
    });
    // Assess
    await expect(attempt).rejects.toMatchObject({ code: 'reason_has_contact' });
    expect((await ledger.get(row.pk))?.version).toBe(row.version);
  });

  it('refuses a phone number in the reason and an email address as operator id, but takes dates and ticket ids', async () => {
    // Prepare
    const { row } = await quarantinedReset('op-pii-2');
    const attempt = (reason: string, operator = 'bo') =>
      decisions().decide({ dedupeKey: row.pk, outcome: 'accepted', reason, operator });
    // Act / Assess
    await expect(attempt(`customer at ${MARKERS.phone} confirmed`)).rejects.toMatchObject({
      code: 'reason_has_contact',
    });
    await expect(attempt('called 5555550123 to confirm')).rejects.toMatchObject({
      code: 'reason_has_contact',
    });
    await expect(attempt('confirmed in the console', 'alice@corp.example')).rejects.toMatchObject({
      code: 'operator_invalid',
    });
    expect((await ledger.get(row.pk))?.version).toBe(row.version);
    const accepted = await attempt('delivered 2024-01-15, ticket INC-12345678');
    expect(accepted).toMatchObject({ state: 'resolved_accepted' });
  });
});
