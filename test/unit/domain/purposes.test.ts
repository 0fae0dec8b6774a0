import { describe, expect, it } from 'vitest';
import { builtSchemas } from '../../../lib/domain/lazySchema.js';
import { BUILT_IN_PURPOSES, PurposeRegistry, purposePolicySchema } from '../../../lib/domain/purposes.js';
import { BUILT_IN_SLOS, DEFAULT_SLO, sloSchema } from '../../../lib/slo/objectives.js';

describe('the built-in purposes', () => {
  it('are registered without building the policy schema (a cold start with no custom purpose)', () => {
    // Act (first in this file: nothing has built a schema yet)
    const registry = PurposeRegistry.withOverrides([]);
    // Assess
    expect(registry.names()).toEqual(['password-reset', 'receipt', 'health-report']);
    expect(builtSchemas()).not.toContain('purposePolicy');
    expect(builtSchemas()).not.toContain('slo');
  });

  it("are written in the policy schema's output form, key for key and in its order", () => {
    for (const policy of BUILT_IN_PURPOSES)
      expect(JSON.stringify(purposePolicySchema().parse(policy))).toBe(JSON.stringify(policy));
    for (const slo of [...Object.values(BUILT_IN_SLOS), DEFAULT_SLO])
      expect(JSON.stringify(sloSchema().parse(slo))).toBe(JSON.stringify(slo));
  });

  it('are frozen, so no caller can change the policy another registry hands out', () => {
    const policy = new PurposeRegistry().get('receipt');
    expect(() => {
      (policy as { maxAttempts: number }).maxAttempts = 50;
    }).toThrow(TypeError);
    expect(() => {
      (policy.slo as { windowDays: number }).windowDays = 1;
    }).toThrow(TypeError);
  });

  it('a custom purpose is still parsed, and an invalid one still refused with its field', () => {
    const custom = { ...BUILT_IN_PURPOSES[1]!, purpose: 'invoice', policyVersion: 'invoice/1' };
    const { cancellable: _dropped, ...withoutDefault } = custom;
    expect(PurposeRegistry.withOverrides([withoutDefault]).get('invoice').cancellable).toBe(false);
    expect(() => PurposeRegistry.withOverrides([{ ...custom, maxAttempts: 0 }])).toThrow(
      /purpose policy #0 is invalid: maxAttempts: /,
    );
    expect(() => new PurposeRegistry([{ ...custom, retentionDays: 1 }])).toThrow(/retentionDays/);
  });
});
