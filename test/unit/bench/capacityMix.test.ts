import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMix, MixError, parseMix } from '../../../bench/capacityMix.js';

const valid = {
  name: 'test',
  purposes: [
    { purpose: 'password-reset', share: 0.6, channels: { email: 0.5, sms: 0.5 }, smsSpendBreaker: true },
    { purpose: 'receipt', share: 0.4, channels: { email: 1 }, cancellable: true },
  ],
  smsCountries: { US: 0.5, GB: 0.5 },
  rates: { retry: 0.05, unknown: 0.01, bounce: 0.01 },
  tenants: { count: 10, topShare: 0.3 },
};

const problemsOf = (raw: unknown): string[] => {
  try {
    parseMix(raw, 'mix.json');
  } catch (error) {
    if (error instanceof MixError) return error.problems;
    throw error;
  }
  return [];
};

describe('the capacity mix file', () => {
  it('accepts the shipped example and fills the deployment with the CDK defaults', () => {
    const mix = loadMix(new URL('../../../bench/capacity.mix.json', import.meta.url).pathname);
    expect(mix.purposes.reduce((s, p) => s + p.share, 0)).toBeCloseTo(1, 9);
    const defaults = parseMix(valid).deployment;
    expect(defaults).toMatchObject({
      evidence: 'push',
      attentionShards: 4,
      publishBatchSize: 10,
      reconcile: { periodSeconds: 300, maxPagesPerRun: 50, pageSize: 25, unknownWaitRuns: 0 },
      lambda: {
        batchSize: 10,
        recordConcurrency: 5,
        accountConcurrency: 1_000,
        dispatcherMaxConcurrency: 1_000,
      },
    });
  });

  it('names every problem by its path', () => {
    expect(
      problemsOf({ ...valid, purposes: [{ ...valid.purposes[0], share: 0.5 }, valid.purposes[1]] }),
    ).toEqual(['purposes: purpose shares add up to 0.9, not 1']);
    expect(
      problemsOf({
        ...valid,
        purposes: [{ ...valid.purposes[0], channels: { email: 0.5 } }, valid.purposes[1]],
      }),
    ).toEqual(['purposes.0.channels: channel shares of a purpose must add up to 1']);
    expect(problemsOf({ ...valid, smsCountries: { us: 1 } })[0]).toMatch(
      /^smsCountries\.us: .*ISO 3166-1 alpha-2/,
    );
    expect(problemsOf({ ...valid, smsCountries: {} })).toEqual([
      'smsCountries: SMS traffic needs its destination countries, with shares adding up to 1',
    ]);
    expect(problemsOf({ ...valid, rates: { retry: 0.6, unknown: 0.3, bounce: 0.2 } })).toEqual([
      'rates: retry + unknown + bounce exceed 1',
    ]);
    expect(problemsOf({ ...valid, tenants: { count: 10, topShare: 0.05 } })).toEqual([
      'tenants.topShare: the largest of 10 tenants sends at least 1/10 of the traffic',
    ]);
    expect(problemsOf({ ...valid, rates: { retry: 1.5, unknown: 0, bounce: 0 } })[0]).toMatch(
      /^rates\.retry: /,
    );
    // Unknown keys are refused, not ignored: a typo must not silently fall back to a default.
    expect(problemsOf({ ...valid, deployment: { attentionShard: 8 } })[0]).toMatch(
      /^deployment: .*attentionShard/,
    );
    expect(problemsOf({ ...valid, deployment: { attentionShards: 65 } })[0]).toMatch(
      /^deployment\.attentionShards: /,
    );
    expect(problemsOf({ name: 'x' })).toEqual(
      expect.arrayContaining([expect.stringMatching(/^purposes: /), expect.stringMatching(/^rates: /)]),
    );
  });

  it('a file that is not there or not JSON is refused with the reason', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capacity-mix-'));
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{ "name": ');
    expect(() => loadMix(bad)).toThrow(/bad\.json: not a valid capacity mix:\n {2}- is not JSON/);
    expect(() => loadMix(join(dir, 'missing.json'))).toThrow(
      /missing\.json: not a valid capacity mix:\n {2}- cannot be read \(ENOENT\)/,
    );
  });
});
