import { describe, expect, it } from 'vitest';
import { appConfigFromContext, CONTEXT } from '../../infra/appConfig.js';
import { SES_AND_SMS, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

const tracingModes = (resources: Resources) => ({
  functions: Object.values(resources)
    .filter((r) => r.Type === 'AWS::Lambda::Function')
    .map((r) => (r.Properties.TracingConfig as { Mode?: string } | undefined)?.Mode ?? 'none'),
  stateMachines: Object.values(resources)
    .filter((r) => r.Type === 'AWS::StepFunctions::StateMachine')
    .map((r) => (r.Properties.TracingConfiguration as { Enabled?: boolean } | undefined)?.Enabled ?? false),
  xrayGrants: Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .filter((r) => JSON.stringify(r.Properties.PolicyDocument).includes('xray:PutTraceSegments')).length,
});

describe('X-Ray tracing (docs/cost.md: traces are priced per recorded trace)', () => {
  it(
    'is active on every function and the reconcile state machine by default',
    () => {
      // Act
      const { template } = synthStack(SES_AND_SMS);
      const modes = tracingModes(template.toJSON().Resources as Resources);
      // Assess
      expect(modes.functions.length).toBeGreaterThan(5);
      expect(new Set(modes.functions)).toEqual(new Set(['Active']));
      expect(modes.stateMachines).toEqual([true]);
      expect(modes.xrayGrants).toBeGreaterThan(0);
    },
    SYNTH_TIMEOUT,
  );

  it(
    'is off everywhere, with no X-Ray grant, when the app context says sendproof:tracing=false',
    () => {
      // Prepare: -c values arrive as strings
      const app = appConfigFromContext((key) =>
        key === CONTEXT.tracing
          ? 'false'
          : key === CONTEXT.email
            ? JSON.stringify(SES_AND_SMS.email)
            : key === CONTEXT.sms
              ? JSON.stringify(SES_AND_SMS.sms)
              : undefined,
      );
      // Act
      const { template } = synthStack((scope) => app.ledger(scope));
      const modes = tracingModes(template.toJSON().Resources as Resources);
      // Assess
      expect(modes.functions.length).toBeGreaterThan(5);
      expect(modes.functions.filter((m) => m === 'Active')).toEqual([]);
      expect(modes.stateMachines).toEqual([false]);
      expect(modes.xrayGrants).toBe(0);
    },
    SYNTH_TIMEOUT,
  );

  it('refuses a tracing context value that is not a boolean', () => {
    // Act / Assess
    expect(() => appConfigFromContext((key) => (key === CONTEXT.tracing ? 'sometimes' : undefined))).toThrow(
      /tracing/,
    );
  });
});
