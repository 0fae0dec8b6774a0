import { CAPACITY_PURPOSES, type CapacityCostsResult, measureCapacityCosts } from './capacityCosts.js';
import { costsFromBench } from './capacityInputs.js';
import { loadMix } from './capacityMix.js';
import { startPipeline } from './capacityPipeline.js';
import { compareRun, runValidation, type ValidationResult } from './capacityValidate.js';
import type { BenchResults } from './results.js';
import { REPO_ROOT } from './stack.js';

export interface CapacitySizes {
  count: number;
  periodSeconds: number;
  validation: { rate: number; seconds: number; periodSeconds: number };
}

/**
 * `npm run bench`'s capacity section: the per-notification costs through the real pipeline, then the
 * model (fed this run's results) against a run of the example mix at a modest rate. One pipeline, on
 * the benchmark's DynamoDB Local.
 */
export const measureCapacity = async (
  dynamoEndpoint: string,
  results: BenchResults,
  sizes: CapacitySizes,
  progress: (line: string) => void,
): Promise<{ costs: CapacityCostsResult; validation: ValidationResult }> => {
  const pipeline = await startPipeline({ dynamoEndpoint, purposes: CAPACITY_PURPOSES, progress });
  try {
    const costs = await measureCapacityCosts(pipeline, {
      count: sizes.count,
      periodMs: sizes.periodSeconds * 1000,
      command: results.command,
      progress,
    });
    const run = await runValidation(pipeline, loadMix(`${REPO_ROOT}bench/capacity.mix.json`), {
      ...sizes.validation,
      pollers: 2,
      progress,
    });
    const validation = compareRun(costsFromBench({ ...results, capacity: costs }), run);
    const worst = Math.max(...validation.rows.filter((r) => r.held).map((r) => r.deviation));
    progress(
      `capacity: model vs pipeline at ${sizes.validation.rate}/s: ${validation.passed ? 'within' : 'NOT within'} ${validation.tolerance * 100} % (worst ${(worst * 100).toFixed(1)} %)`,
    );
    return { costs, validation };
  } finally {
    await pipeline.stop();
  }
};
