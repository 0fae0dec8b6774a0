import { describe, expect, inject, it } from 'vitest';

describe('the unit project', () => {
  it('runs without the global setup that starts DynamoDB Local', () => {
    // Assess: only the `servers` project's global setup provides an endpoint (vitest.config.ts)
    expect(inject('dynamodbEndpoint')).toBeUndefined();
  });
});
