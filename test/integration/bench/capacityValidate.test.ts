import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CAPACITY_PURPOSES } from '../../../bench/capacityCosts.js';
import { type CapacityCosts, loadCosts } from '../../../bench/capacityInputs.js';
import { loadMix } from '../../../bench/capacityMix.js';
import { type Pipeline, startPipeline } from '../../../bench/capacityPipeline.js';
import { renderValidationText } from '../../../bench/capacityReport.js';
import { compareRun, runValidation, type ValidationRun } from '../../../bench/capacityValidate.js';

// The capacity model against the real pipeline on the local stack, at a small scale: DynamoDB Local (the
// run's global setup), fauxqs and the provider simulator (a test double) in this process, the production
// function entries behind per-function metering proxies. The costs are the committed benchmark result
// file's (bench/results/latest.json), as `npm run capacity` reads them.

const file = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

describe('the capacity model predicts a run of the real pipeline', () => {
  let pipeline: Pipeline;
  let costs: CapacityCosts;
  let run: ValidationRun;

  beforeAll(async () => {
    costs = loadCosts(file('bench/results/latest.json'));
    pipeline = await startPipeline({
      dynamoEndpoint: inject('dynamodbEndpoint'),
      purposes: CAPACITY_PURPOSES,
    });
    // 100 notifications of the example mix at 5/s (5 retried, 1 unknown, 1 bounced), reconcile every 3 s.
    run = await runValidation(pipeline, loadMix(file('bench/capacity.mix.json')), {
      rate: 5,
      seconds: 20,
      periodSeconds: 3,
      pollers: 2,
    });
  }, 240_000);
  afterAll(async () => {
    await pipeline?.stop();
  });

  it('units per function, table and index, invocations and SQS requests within 20 % of the model', () => {
    const result = compareRun(costs, run);
    console.log(renderValidationText(result));
    const held = result.rows.filter((r) => r.held);
    // What must be held: the DynamoDB units and requests of both functions, and the invocations.
    expect(held.map((r) => r.quantity)).toEqual(
      expect.arrayContaining([
        'dispatch: ledger WCU',
        'dispatch: DynamoDB requests',
        'reconcile: ledger WCU',
        'reconcile: ledger RCU',
        'reconcile: DynamoDB requests',
        'dispatch invocations',
        'provider requests',
      ]),
    );
    expect(held.filter((r) => !r.ok)).toEqual([]);
    expect(result.passed).toBe(true);
  });

  it('the comparison can fail: the same run against costs with a wrong dispatch write count', () => {
    const wrong = structuredClone(costs);
    for (const s of Object.values(wrong.scenarios)) s.dispatch.ledger!.writeUnits *= 1.5;
    const result = compareRun(wrong, run);
    expect(result.passed).toBe(false);
    expect(result.rows.find((r) => r.quantity === 'dispatch: ledger WCU')).toMatchObject({ ok: false });
    expect(result.rows.find((r) => r.quantity === 'reconcile: ledger WCU')).toMatchObject({ ok: true });
  });
});
