import { describe, expect, it } from 'vitest';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { SLO_METRIC, sloMetricSets } from '../../../lib/slo/metrics.js';
import { sloObservationsOf } from '../../../lib/slo/observations.js';
import { at, notificationRecords } from '../../fixtures/archive/streamRecords.js';

const t0 = at('2026-11-30T10:00:00Z');
const receipt = (eventId: string) => ({
  eventId,
  recipientRef: 'player-1',
  channel: 'email' as const,
  purpose: 'receipt',
});

const happy = (eventId: string, waitedMs: number) =>
  notificationRecords(receipt(eventId), [
    {
      s: 'dispatching',
      at: t0,
      by: 'dispatch:w1',
      n: 1,
      set: { transport: 'ses', attempts: 1, reqAt: t0 - waitedMs },
    },
    { s: 'accepted', at: t0 + 400, by: 'dispatch:w1', msg: 'm', n: 1, set: { providerMessageId: 'm' } },
  ]);

const lostThenQuarantined = () =>
  notificationRecords(receipt('q'), [
    { s: 'dispatching', at: t0, by: 'dispatch:w1', n: 1, set: { transport: 'ses', attempts: 1, reqAt: t0 } },
    { s: 'unknown', at: t0 + 5_000, by: 'dispatch:w1', why: 'provider_timeout_after_send' },
    { s: 'quarantined', at: t0 + 86_400_000, by: 'reconciler:r', why: 'ambiguity_deadline_passed' },
    { s: 'resolved_accepted', at: t0 + 90_000_000, by: 'operator:alice', why: 'seen' },
  ]);

describe('SLO observations from the ledger stream', () => {
  it('acceptance is decided once, at the first deciding state, with the latency from the request', () => {
    // Act
    const fast = happy('a', 700).flatMap(sloObservationsOf);
    const lost = lostThenQuarantined().flatMap(sloObservationsOf);

    // Assess
    expect(fast.filter((o) => o.kind === 'acceptance')).toEqual([
      {
        kind: 'acceptance',
        purpose: 'receipt',
        channel: 'email',
        state: 'accepted',
        latencyMs: 1_100,
        reachedProvider: true,
      },
    ]);
    // quarantined decides (bad); the operator's resolved_accepted later does not decide again.
    expect(
      lost
        .filter((o) => o.kind === 'acceptance')
        .map((o) => o.kind === 'acceptance' && [o.state, o.reachedProvider]),
    ).toEqual([['quarantined', false]]);
  });

  it('time in each non-final state is measured at the transition that leaves it; final moves are terminal results', () => {
    // Act
    const lost = lostThenQuarantined().flatMap(sloObservationsOf);

    // Assess
    expect(
      lost.filter((o) => o.kind === 'state_time').map((o) => o.kind === 'state_time' && [o.state, o.ms]),
    ).toEqual([
      ['dispatching', 5_000],
      ['unknown', 86_395_000],
      ['quarantined', 3_600_000],
    ]);
    expect(lost.filter((o) => o.kind === 'terminal').map((o) => o.kind === 'terminal' && o.state)).toEqual([
      'resolved_accepted',
    ]);
  });

  it('the same records read twice give the same observations (no state outside the images)', () => {
    // Act & Assess
    expect(happy('a', 700).flatMap(sloObservationsOf)).toEqual(happy('a', 700).flatMap(sloObservationsOf));
  });

  it('metric sets: good only when the provider took it within the purpose objective (receipt: 120 s)', () => {
    // Prepare: 3 in time, 1 that waited 3 minutes in the queue, 1 quarantined.
    const observations = [
      ...happy('a', 100),
      ...happy('b', 1_000),
      ...happy('c', 119_000),
      ...happy('d', 180_000),
      ...lostThenQuarantined(),
    ].flatMap(sloObservationsOf);

    // Act
    const sets = sloMetricSets(observations, new PurposeRegistry());
    const base = sets.find(
      (s) => JSON.stringify(s.dimensions) === JSON.stringify({ purpose: 'receipt', channel: 'email' }),
    )!;
    const value = (name: string) => base.metrics.find((m) => m.name === name)?.values;

    // Assess
    expect(value(SLO_METRIC.acceptanceDecided)).toEqual([5]);
    expect(value(SLO_METRIC.acceptanceGood)).toEqual([3]);
    expect(value(SLO_METRIC.acceptances)).toEqual([4]);
    expect(value(SLO_METRIC.acceptLatency)).toEqual([500, 1_400, 119_400, 180_400]);
    const perPurpose = sets.find(
      (s) => JSON.stringify(s.dimensions) === JSON.stringify({ purpose: 'receipt' }),
    )!;
    expect(perPurpose.metrics.map((m) => [m.name, m.values])).toEqual([
      [SLO_METRIC.acceptanceDecided, [5]],
      [SLO_METRIC.acceptanceGood, [3]],
    ]);
    for (const set of sets) expect(Object.keys(set.dimensions)).toContain('purpose');
    expect(JSON.stringify(sets)).not.toMatch(/player-1|receipt:a:/);
  });
});
